// The store's challenge-response: how a TcpStore client and a TcpStoreServer that share the
// job token prove it to each other before any request is served (store_protocol.h,
// kAuthHello and kAuthProof).
//
//   client: kAuthHello {nonce_c}   ->   server: OK {nonce_s, HMAC(token, server | nonces)}
//   client checks the server's digest, then
//   client: kAuthProof {HMAC(token, client | nonces)}   ->   server: OK, or a close
//
// The token is only the key of the digests, never sent. Both nonces are fresh per connection,
// so a recorded exchange replayed later proves nothing; the side label keeps the server's
// digest from serving as the client's. The token comes from WEFT_JOB_TOKEN unless given.
#pragma once

#include <optional>
#include <string>

#include "util/hmac.h"

namespace weft::store {

enum class AuthSide { kClient, kServer };

// The digest `side` presents on the connection with these nonces.
util::Digest auth_mac(const std::string& token, AuthSide side, const util::Nonce& client_nonce,
                      const util::Nonce& server_nonce);

// The token a store endpoint authenticates with: `given` when set, else WEFT_JOB_TOKEN; empty
// means none (an open store, as without a job token).
std::string auth_token(const std::optional<std::string>& given);

}  // namespace weft::store
