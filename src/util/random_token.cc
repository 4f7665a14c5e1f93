#include "util/random_token.h"

#include <sys/random.h>

#include <cerrno>
#include <vector>

#include "util/socket.h"

namespace weft::util {

std::string random_hex(int bytes) {
  std::vector<unsigned char> raw(bytes);
  std::size_t got = 0;
  while (got < raw.size()) {
    ssize_t n = getrandom(raw.data() + got, raw.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_system_error("getrandom", errno);
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned char c : raw) {
    text += kHex[c >> 4];
    text += kHex[c & 15];
  }
  return text;
}

}  // namespace weft::util
