// HMAC-SHA256 (OpenSSL's libcrypto) and what the job's challenge-responses need around it:
// a digest type, a constant-time comparison, and fresh random nonces.
//
// A digest proves knowledge of the job token without revealing it: the token is only ever the
// key, never part of what is sent or stored. Callers bind every digest to its context (a
// label naming the protocol and direction, both sides' nonces, their identities), so a digest
// made for one purpose is worthless for another.
// Thread safety: every function is safe to call from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft::util {

inline constexpr std::size_t kDigestBytes = 32;
inline constexpr std::size_t kNonceBytes = 32;

using Digest = std::array<uint8_t, kDigestBytes>;
using Nonce = std::array<uint8_t, kNonceBytes>;

// HMAC-SHA256 of `message` under `key`. Throws weft::Error(kInternal) if libcrypto fails.
Digest hmac_sha256(std::string_view key, const std::vector<uint8_t>& message);

// Whether two digests are equal, in time independent of where they differ (CRYPTO_memcmp), so
// that a peer cannot learn a valid digest byte by byte from how fast it is refused.
bool same_digest(const Digest& a, const Digest& b);

// kNonceBytes from the kernel's CSPRNG (getrandom): never repeats in practice, so a recorded
// exchange cannot be replayed against a new one.
Nonce fresh_nonce();

}  // namespace weft::util
