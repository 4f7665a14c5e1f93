#include "weft/version.h"

namespace weft {

const char* version_string() { return "0.1.0"; }

}  // namespace weft
