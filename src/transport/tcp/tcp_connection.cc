#include "transport/tcp/tcp_connection.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace weft::transport {

namespace {

// A frame is written (and, sent zero-copy, released): its send is done, a striped one with its
// last piece.
void complete_send(const RequestPtr& request, const std::shared_ptr<StripedSend>& striped) {
  if (striped) {
    if (striped->pieces_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      striped->request->complete();
    }
  } else if (request) {
    request->complete();
  }
}

// Copies we own (control frames, cancelled sends) are freed once written, which may be before
// the kernel is done with them.
bool worth_zero_copy(const OutboundFrame& frame) {
  return frame.payload_bytes >= kZerocopyMinBytes && frame.owned.empty();
}

}  // namespace

bool TcpConnection::flush_locked(int* error) {
  constexpr int kMaxIov = 64;
  while (!queue.empty()) {
    iovec iov[kMaxIov];
    int count = 0;
    OutboundFrame& first = queue.front();
    // A zero-copy call names one payload and nothing else: the kernel holds on to every byte a
    // call names until its notice, and the headers' room in the queue is reused before that.
    const bool zero_copy = zerocopy && first.sent >= kFrameHeaderBytes && worth_zero_copy(first);
    if (zero_copy) {
      const std::size_t offset = first.sent - kFrameHeaderBytes;
      iov[count++] = {const_cast<uint8_t*>(first.payload) + offset, first.payload_bytes - offset};
    }
    for (auto it = queue.begin(); !zero_copy && it != queue.end() && count + 2 <= kMaxIov; ++it) {
      std::size_t offset = it->sent;
      if (offset < kFrameHeaderBytes) {
        iov[count++] = {it->header + offset, kFrameHeaderBytes - offset};
        offset = kFrameHeaderBytes;
      }
      if (zerocopy && worth_zero_copy(*it)) break;  // its payload goes in a call of its own
      std::size_t payload_offset = offset - kFrameHeaderBytes;
      if (payload_offset < it->payload_bytes) {
        iov[count++] = {const_cast<uint8_t*>(it->payload) + payload_offset,
                        it->payload_bytes - payload_offset};
      }
    }
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = count;
    constexpr int kFlags = MSG_NOSIGNAL | MSG_DONTWAIT;
    ssize_t written = ::sendmsg(fd.get(), &message, kFlags | (zero_copy ? MSG_ZEROCOPY : 0));
    if (written < 0 && zero_copy && errno == ENOBUFS) {
      // Over the socket's allowance for pinned pages (net.core.optmem_max): this part is copied.
      written = ::sendmsg(fd.get(), &message, kFlags);
    } else if (written > 0 && zero_copy) {
      if (!first.zerocopy) first.zerocopy = std::make_shared<ZerocopyTicket>();
      ++first.zerocopy->unreleased;
      zerocopy_calls.push_back({zerocopy_next_id++, first.zerocopy});
      ++zerocopy_sends;
    }
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
      if (front.zerocopy && front.zerocopy->unreleased > 0) {
        // The kernel still reads the payload: the send completes with its notice.
        ZerocopyTicket& ticket = *front.zerocopy;
        ticket.written = true;
        ticket.request = std::move(front.request);
        ticket.striped = std::move(front.striped);
      } else {
        complete_send(front.request, front.striped);
      }
      queue.pop_front();
    }
  }
  return true;
}

bool TcpConnection::write_alone_locked(OutboundFrame& frame) {
  // A payload that goes zero-copy must not share its call with the header (flush_locked).
  if (zerocopy && worth_zero_copy(frame)) return false;
  iovec iov[2] = {{frame.header, kFrameHeaderBytes},
                  {const_cast<uint8_t*>(frame.payload), frame.payload_bytes}};
  msghdr message{};
  message.msg_iov = iov;
  message.msg_iovlen = frame.payload_bytes > 0 ? 2 : 1;
  ssize_t written;
  do {
    written = ::sendmsg(fd.get(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (written < 0 && errno == EINTR);
  if (written <= 0) return false;
  frame.sent = static_cast<std::size_t>(written);
  if (frame.sent < frame.total()) return false;
  complete_send(frame.request, frame.striped);
  return true;
}

bool TcpConnection::reap_zerocopy_locked() {
  bool any = false;
  std::optional<bool> delivered;  // asked once, at the first notice
  ZerocopyNotice notice;
  while (fd.valid() && read_zerocopy_notice(fd.get(), &notice)) {
    any = true;
    if (!delivered) delivered = releases_mean_delivery(fd.get());
    // Released by a reset, not by the peer's acknowledgement: the sends stay pending, and the
    // peer's failure (drop_peer) fails them.
    if (!*delivered) continue;
    if (notice.copied && !zerocopy_when_copied) zerocopy = false;  // it would only cost
    for (auto it = zerocopy_calls.begin(); it != zerocopy_calls.end();) {
      if (!covers(notice, it->id)) {
        ++it;
        continue;
      }
      ZerocopyTicket& ticket = *it->ticket;
      if (--ticket.unreleased == 0 && ticket.written) complete_send(ticket.request, ticket.striped);
      it = zerocopy_calls.erase(it);
    }
  }
  return any;
}

bool TcpConnection::lends_buffer_locked(const Request& request) const {
  for (const OutboundFrame& frame : queue) {
    if (frame.request.get() == &request && frame.zerocopy && frame.zerocopy->unreleased > 0) {
      return true;
    }
  }
  for (const ZerocopyCall& call : zerocopy_calls) {
    if (call.ticket->request.get() == &request) return true;
  }
  return false;
}

void TcpConnection::compact() {
  if (staged_begin == 0) return;
  std::size_t count = staged();
  if (count > 0) std::memmove(staging.data(), staging.data() + staged_begin, count);
  staged_begin = 0;
  staged_end = count;
}

void TcpConnection::stage_frames() {
  if (staging.size() < kReadyStagingBytes) staging.resize(kReadyStagingBytes);
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
