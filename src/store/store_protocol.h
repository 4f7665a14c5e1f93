// The TCP store's wire protocol, shared by TcpStore (client) and TcpStoreServer.
//
// Every frame is a u32 little-endian body length followed by the body. A request body is a
// u8 command and its fields (strings and values as u32-length blobs, integers little-endian);
// a reply body is a u8 status and its fields. One request is answered before the next is read.
//
//   command      fields                               OK reply
//   kSet         key, value                            -
//   kGet         key, u64 timeout_ms                   value
//   kAdd         key, i64 delta                        i64 new value
//   kCompareSet  key, expected, desired                value now held
//   kDelete      key                                   u8 existed
//   kCheck       u32 n, n keys                         u8 all present
//   kNumKeys     -                                     i64
//   kWait        u32 n, n keys, u64 timeout_ms         -
//   kMultiGet    u32 n, n keys, u64 timeout_ms         u32 n, n values
//   kMultiSet    u32 n, n (key, value)                 -
//   kPing        -                                     -
//   kAuthHello   client nonce (32 bytes)               server nonce, server digest (32 + 32)
//   kAuthProof   client digest (32 bytes)              -
// A kTimeout reply carries the missing keys as text; kError carries a message.
//
// A server that has the job token (store_auth.h) serves nothing before a client has passed
// kAuthHello then kAuthProof: any other request, or a wrong digest, gets no reply and the
// connection is closed. A server without a token answers kAuthHello with kError.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/byte_codec.h"
#include "weft/store.h"

namespace weft::store {

enum class Command : uint8_t {
  kSet = 1,
  kGet,
  kAdd,
  kCompareSet,
  kDelete,
  kCheck,
  kNumKeys,
  kWait,
  kMultiGet,
  kMultiSet,
  kPing,
  kAuthHello,
  kAuthProof,
};

enum class Status : uint8_t { kOk = 0, kTimeout = 1, kError = 2 };

inline constexpr std::size_t kFrameHeaderBytes = 4;

// Prepends the u32 length to body.
std::vector<uint8_t> frame(const std::vector<uint8_t>& body);

std::vector<std::string> read_keys(util::ByteReader& reader);
void write_keys(util::ByteWriter& writer, const std::vector<std::string>& keys);

}  // namespace weft::store
