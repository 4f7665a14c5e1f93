#include "util/hmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>

#include "util/socket.h"
#include "weft/error.h"

namespace weft::util {

Digest hmac_sha256(std::string_view key, const std::vector<uint8_t>& message) {
  Digest digest{};
  unsigned int length = 0;
  // An empty key is valid HMAC; OpenSSL only needs a non-null pointer for it.
  static const unsigned char kNoKey = 0;
  const void* key_bytes = key.empty() ? &kNoKey : static_cast<const void*>(key.data());
  const unsigned char* result = HMAC(EVP_sha256(), key_bytes, static_cast<int>(key.size()),
                                     message.data(), message.size(), digest.data(), &length);
  if (result == nullptr || length != kDigestBytes) {
    throw Error(ErrorCode::kInternal, "HMAC-SHA256 failed in libcrypto");
  }
  return digest;
}

bool same_digest(const Digest& a, const Digest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), kDigestBytes) == 0;
}

Nonce fresh_nonce() {
  Nonce nonce{};
  std::size_t got = 0;
  while (got < nonce.size()) {
    ssize_t n = getrandom(nonce.data() + got, nonce.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_system_error("getrandom", errno);
    got += static_cast<std::size_t>(n);
  }
  return nonce;
}

}  // namespace weft::util
