#include "store/store_auth.h"

#include <cstring>
#include <vector>

#include "util/settings.h"

namespace weft::store {

util::Digest auth_mac(const std::string& token, AuthSide side, const util::Nonce& client_nonce,
                      const util::Nonce& server_nonce) {
  const char* label = side == AuthSide::kClient ? "weft-store-1 client" : "weft-store-1 server";
  std::vector<uint8_t> message(label, label + std::strlen(label) + 1);  // with its NUL
  message.insert(message.end(), client_nonce.begin(), client_nonce.end());
  message.insert(message.end(), server_nonce.begin(), server_nonce.end());
  return util::hmac_sha256(token, message);
}

std::string auth_token(const std::optional<std::string>& given) {
  return given ? *given : util::setting_string("WEFT_JOB_TOKEN");
}

}  // namespace weft::store
