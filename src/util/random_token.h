// Random hex strings from the kernel's CSPRNG, for job tokens and unique names.
#pragma once

#include <string>

namespace weft::util {

// 2 * bytes hex characters from getrandom(2).
std::string random_hex(int bytes);

}  // namespace weft::util
