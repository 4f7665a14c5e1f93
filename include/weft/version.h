// weft's version: WEFT_VERSION_* are the headers' version (what a program was compiled
// against); weft::version() is the version of the library loaded at run time.
#pragma once

#include "weft/export.h"

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT_VERSION_STRING "0.1.0"
// One number that orders versions: 10000 * major + 100 * minor + patch.
#define WEFT_VERSION (WEFT_VERSION_MAJOR * 10000 + WEFT_VERSION_MINOR * 100 + WEFT_VERSION_PATCH)

namespace weft {

// "major.minor.patch" of the loaded library.
WEFT_API const char* version();

}  // namespace weft
