#include "transport/tcp/zerocopy.h"

#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "weft/error.h"

namespace weft::transport {

ZerocopyMode parse_zerocopy_setting(std::string_view value) {
  if (value.empty() || value == "auto") return ZerocopyMode::kAuto;
  if (value == "0") return ZerocopyMode::kOff;
  if (value == "1") return ZerocopyMode::kOn;
  throw Error(ErrorCode::kInvalidArgument,
              "WEFT_SOCKET_ZEROCOPY=" + std::string(value) + ": expected auto, 0 or 1");
}

bool zerocopy_wanted(ZerocopyMode mode, int speed_mbps) {
  switch (mode) {
    case ZerocopyMode::kOff:
      return false;
    case ZerocopyMode::kOn:
      return true;
    case ZerocopyMode::kAuto:
      break;
  }
  return speed_mbps >= kZerocopyMinMbps;
}

bool enable_zerocopy(int fd) {
  int one = 1;
  return ::setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) == 0;
}

bool read_zerocopy_notice(int fd, ZerocopyNotice* notice) {
  for (;;) {
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(sock_extended_err)) + 64];
    msghdr message{};
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    if (::recvmsg(fd, &message, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header;
         header = CMSG_NXTHDR(&message, header)) {
      const bool is_error = (header->cmsg_level == SOL_IP && header->cmsg_type == IP_RECVERR) ||
                            (header->cmsg_level == SOL_IPV6 && header->cmsg_type == IPV6_RECVERR);
      if (!is_error) continue;
      sock_extended_err error;
      std::memcpy(&error, CMSG_DATA(header), sizeof error);
      if (error.ee_origin != SO_EE_ORIGIN_ZEROCOPY || error.ee_errno != 0) continue;
      notice->first = error.ee_info;
      notice->last = error.ee_data;
      notice->copied = (error.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0;
      return true;
    }
    // Something else on the error queue (TCP queues nothing else unless asked): skipped.
  }
}

bool releases_mean_delivery(int fd) {
  tcp_info info{};
  socklen_t length = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return false;
  return info.tcpi_state == TCP_ESTABLISHED || info.tcpi_state == TCP_CLOSE_WAIT;
}

}  // namespace weft::transport
