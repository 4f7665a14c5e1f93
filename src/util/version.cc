#include "weft/version.h"

namespace weft {

const char* version() { return WEFT_VERSION_STRING; }

}  // namespace weft
