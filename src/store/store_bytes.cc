#include "weft/store.h"

namespace weft {

Bytes to_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }
std::string to_string(const Bytes& bytes) { return std::string(bytes.begin(), bytes.end()); }

}  // namespace weft
