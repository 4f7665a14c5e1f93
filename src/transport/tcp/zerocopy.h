// Large payloads sent with MSG_ZEROCOPY (WEFT_SOCKET_ZEROCOPY): the kernel reads them from the
// caller's buffer as the NIC sends, instead of copying them into the socket first.
//
// The copy it saves costs the sending core about 0.1 s per GB: a third of a core or more at
// 25 Gbit/s (3 GB/s) and up, beside the reductions the collective computes; less than a sixth
// at 10 Gbit/s, not worth what zero-copy costs in return. The pages are pinned per call, and
// the buffer is the kernel's until it says so on the socket's error queue, which is after the
// peer acknowledged the bytes: a send completes a round trip later than a copied one. Hence
// only large payloads, and by default only on fast links. Where the kernel copies anyway
// (loopback, veth, a NIC without scatter-gather) it says so in its notice, and the connection
// stops asking.
//
// Thread-safety: functions of values, and of one socket whose send lock the caller holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "transport/request.h"
#include "transport/tcp/striped_message.h"

namespace weft::transport {

// The smallest payload sent zero-copy: below it pinning and the notice cost more than the copy.
inline constexpr std::size_t kZerocopyMinBytes = 256 * 1024;

enum class ZerocopyMode {
  kAuto,  // on links of kZerocopyMinMbps and up, read from the interface's speed
  kOff,
  kOn,  // every connection, until the kernel reports that it copied
};

// A link at least this fast costs a core a large share of its time in copies.
inline constexpr int kZerocopyMinMbps = 25'000;

// WEFT_SOCKET_ZEROCOPY: auto, 0 or 1. Throws weft::Error (kInvalidArgument) naming the setting
// and its value otherwise.
ZerocopyMode parse_zerocopy_setting(std::string_view value);

// Whether a connection on an interface of `speed_mbps` (0 or less: unknown) asks for zero-copy.
bool zerocopy_wanted(ZerocopyMode mode, int speed_mbps);

// SO_ZEROCOPY on `fd`; false when the kernel does not support it (before Linux 4.14).
bool enable_zerocopy(int fd);

// The kernel is done with the zero-copy sends numbered `first` to `last` (it numbers the
// successful MSG_ZEROCOPY calls of a socket from 0, wrapping at 2^32); `copied`: it copied
// their bytes after all.
struct ZerocopyNotice {
  uint32_t first = 0;
  uint32_t last = 0;
  bool copied = false;
};

// Reads one notice from `fd`'s error queue without blocking; false when there is none.
bool read_zerocopy_notice(int fd, ZerocopyNotice* notice);

// Whether a release on `fd` means delivery: the connection is still established (or only the
// peer has finished sending). A reset releases every page the kernel never sent.
bool releases_mean_delivery(int fd);

// Whether send `id` is among a notice's (wrapping).
inline bool covers(const ZerocopyNotice& notice, uint32_t id) {
  return static_cast<uint32_t>(id - notice.first) <=
         static_cast<uint32_t>(notice.last - notice.first);
}

// One frame's zero-copy sends the kernel has not released yet. The frame's send completes once
// the frame is written and `unreleased` is 0, whichever comes last.
struct ZerocopyTicket {
  uint32_t unreleased = 0;
  bool written = false;
  // Set once the frame is written (until then the frame holds them): what completes.
  RequestPtr request;
  std::shared_ptr<StripedSend> striped;
};

}  // namespace weft::transport
