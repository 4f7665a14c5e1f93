#include "transport/tcp/tcp_connection.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace weft::transport {

bool TcpConnection::flush_locked(int* error) {
  constexpr int kMaxIov = 64;
  while (!queue.empty()) {
    iovec iov[kMaxIov];
    int count = 0;
    for (auto it = queue.begin(); it != queue.end() && count + 2 <= kMaxIov; ++it) {
      std::size_t offset = it->sent;
      if (offset < kFrameHeaderBytes) {
        iov[count++] = {it->header + offset, kFrameHeaderBytes - offset};
        offset = kFrameHeaderBytes;
      }
      std::size_t payload_offset = offset - kFrameHeaderBytes;
      if (payload_offset < it->payload_bytes) {
        iov[count++] = {const_cast<uint8_t*>(it->payload) + payload_offset,
                        it->payload_bytes - payload_offset};
      }
    }
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = count;
    ssize_t written = ::sendmsg(fd.get(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      *error = errno;
      return false;
    }
    std::size_t left = static_cast<std::size_t>(written);
    while (left > 0) {
      OutboundFrame& front = queue.front();
      std::size_t take = std::min(left, front.total() - front.sent);
      front.sent += take;
      left -= take;
      if (front.sent < front.total()) break;
      if (front.striped) {
        if (front.striped->pieces_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
          front.striped->request->complete();
        }
      } else if (front.request) {
        front.request->complete();
      }
      queue.pop_front();
    }
  }
  return true;
}

void TcpConnection::compact() {
  if (staged_begin == 0) return;
  std::size_t count = staged();
  if (count > 0) std::memmove(staging.data(), staging.data() + staged_begin, count);
  staged_begin = 0;
  staged_end = count;
}

void TcpConnection::grow_staging() {
  if (staging.size() < kStagingBytes) staging.resize(kStagingBytes);
}

void TcpConnection::release_inbound_buffers() {
  // swap, not clear(): clear keeps the capacity.
  std::vector<uint8_t>().swap(staging);
  std::vector<uint8_t>().swap(control_payload);
  staged_begin = staged_end = 0;
  in_payload = false;
  payload_left = 0;
  payload_target = nullptr;
}

}  // namespace weft::transport
