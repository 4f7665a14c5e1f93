#include "coll/collective_call.h"

#include <algorithm>
#include <cstring>

#include "util/stream_copy.h"
#include "weft/error.h"

namespace weft::coll {

uint64_t CollectiveCall::tag(uint32_t step) const {
  if (step >= kMaxSteps) {
    throw Error(ErrorCode::kInternal,
                std::string(name_) + ": step " + std::to_string(step) + " out of range");
  }
  return (static_cast<uint64_t>(seq_) << 20) | step;
}

core::RequestPtr CollectiveCall::isend(int peer, uint32_t step, const void* data,
                                       std::size_t bytes) {
  return comm_.post_send(core::Channel::kCollective, peer, tag(step), signature_, data, bytes);
}

core::RequestPtr CollectiveCall::irecv(int peer, uint32_t step, void* data, std::size_t bytes) {
  return comm_.post_recv(core::Channel::kCollective, peer, tag(step), signature_, data, bytes);
}

core::OpInfo CollectiveCall::info_for(const core::Request& request) const {
  core::OpInfo info{name_};
  info.peer = request.peer >= 0 ? comm_.group_rank_of(request.peer) : -1;
  info.bytes = static_cast<int64_t>(request.bytes);
  info.seq = seq_;
  info.timeout = deadline_.timeout();
  return info;
}

void CollectiveCall::wait(const core::RequestPtr& request) {
  try {
    comm_.wait(*request, info_for(*request), deadline_.get());
  } catch (const Error& error) {
    // Fail the group's collectives at once, here and on every member: the algorithm's other
    // requests (and the partners waiting on us) must not sit until their deadline.
    comm_.fail_collectives(std::make_shared<const Error>(error));
    throw;
  }
}

void CollectiveCall::wait_all(std::span<const core::RequestPtr> requests) {
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i]) continue;
    try {
      wait(requests[i]);
    } catch (const Error& error) {
      // The rest must not touch their buffers after we return.
      auto cause = std::make_shared<const Error>(error);
      for (std::size_t j = i + 1; j < requests.size(); ++j) {
        if (requests[j]) comm_.cancel(*requests[j], cause);
      }
      throw;
    }
  }
}

void CollectiveCall::send_recv(int send_peer, uint32_t step, const void* send_data,
                               std::size_t send_bytes, int recv_peer, void* recv_data,
                               std::size_t recv_bytes) {
  core::RequestPtr requests[2];  // a null one is skipped
  if (recv_peer >= 0) requests[0] = irecv(recv_peer, step, recv_data, recv_bytes);
  if (send_peer >= 0) requests[1] = isend(send_peer, step, send_data, send_bytes);
  wait_all(requests);
}

void CollectiveCall::copy_while_in_flight(void* to, const void* from, std::size_t bytes,
                                          const std::vector<core::RequestPtr>& in_flight) {
  // Copying a piece takes far less than a socket buffer takes to drain at link speed.
  constexpr std::size_t kPieceBytes = 512 * 1024;
  auto* out = static_cast<unsigned char*>(to);
  const auto* in = static_cast<const unsigned char*>(from);
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t piece = std::min(kPieceBytes, bytes - done);
    std::memcpy(out + done, in + done, piece);
    done += piece;
    if (done == bytes) break;
    for (const core::RequestPtr& request : in_flight) {
      if (request) comm_.progress(*request);
    }
  }
}

void CollectiveCall::send(int peer, uint32_t step, const void* data, std::size_t bytes) {
  wait(isend(peer, step, data, bytes));
}

void CollectiveCall::recv(int peer, uint32_t step, void* data, std::size_t bytes) {
  wait(irecv(peer, step, data, bytes));
}

}  // namespace weft::coll

namespace weft::coll {

CollectiveCall CollectiveCall::on(core::Communicator& group) const {
  // The same deadline, and the timeout that set it (error messages quote it); but a member of
  // this host that is not its leader waits a little longer. When the leader's part across hosts
  // times out, the leader's error (which names the rank across hosts that did not come) must
  // reach the member through the host's window before the member's own timeout would name only
  // the leader.
  util::Clock::time_point deadline = deadline_.get();
  const std::chrono::milliseconds timeout = deadline_.timeout();
  const core::HostGroups* host_groups = comm_.made_host_groups();
  if (host_groups && &group == host_groups->local.get() && !host_groups->leaders &&
      deadline != util::Clock::time_point::max() && timeout.count() > 0) {
    deadline += std::min<std::chrono::milliseconds>(timeout / 2, kMemberGrace);
  }
  return CollectiveCall(group, name_, signature_, group.next_seq(),
                        util::LazyDeadline(deadline, timeout), segment_bytes_);
}

void CollectiveCall::fill_slot(uint8_t* to, const void* from, std::size_t bytes,
                               std::size_t round_piece) {
  if (round_piece < core::SlotStorePolicy::kFromBytes) {
    std::memcpy(to, from, bytes);
    return;
  }
  if (choosing_piece_ == 0) {
    choosing_piece_ = round_piece;
    streamed_fills_ = window_->streams_slot_pieces(static_cast<int>(signature_.kind), round_piece);
    // Only calls whose kind of store is learned read the clock: it is a visible part of a
    // small call.
    if (window_->rank() == 0) first_fill_ = std::chrono::steady_clock::now();
  }
  filled_bytes_ += bytes;
  if (streamed_fills_) {
    util::copy_streaming(to, from, bytes);
  } else {
    std::memcpy(to, from, bytes);
  }
}

void CollectiveCall::report_slot_fills() {
  // A call that filled nothing says nothing about the kinds of store.
  if (choosing_piece_ == 0 || filled_bytes_ == 0 || window_->rank() != 0) return;
  auto now = std::chrono::steady_clock::now();
  window_->record_slot_fill(static_cast<int>(signature_.kind), choosing_piece_, streamed_fills_,
                            filled_bytes_, now - first_fill_, now);
}

core::LocalWindow* CollectiveCall::first_window() {
  // An open window needs no deadline, and reading the clock is a visible part of a small call.
  window_ = comm_.open_window();
  if (!window_) window_ = comm_.local_window(window_info(), deadline_.get());
  window_checked_ = true;
  return window_;
}

std::size_t CollectiveCall::round_bytes() {
  return std::min(window()->slot_bytes(), std::max<std::size_t>(segment_bytes_, 256));
}

uint8_t* CollectiveCall::round_slot() { return window()->my_slot(); }

uint8_t* CollectiveCall::round_slot(std::size_t bytes) { return window()->my_slot(bytes); }

void CollectiveCall::finish_round() {
  comm_.complete_window_round(*window(), signature_, round_bytes(), window_info(), deadline_);
}

void CollectiveCall::arrive_round() {
  comm_.arrive_window_round(*window(), signature_, round_bytes(), window_info());
}

void CollectiveCall::wait_round() { comm_.wait_window_round(*window(), window_info(), deadline_); }

core::OpInfo CollectiveCall::window_info(int peer) const {
  core::OpInfo info{name_};
  info.seq = seq_;
  info.peer = peer;
  info.timeout = deadline_.timeout();
  return info;
}

const uint8_t* CollectiveCall::member_slot(int rank) { return window()->slot(rank); }

void CollectiveCall::begin_eager() {
  comm_.begin_eager_round(*window(), signature_, window_info(), deadline_);
}

const uint8_t* CollectiveCall::await_eager_data(int rank) {
  comm_.wait_eager_round(*window(), rank, window_info(rank), deadline_);
  return window()->eager_data(rank);
}

const uint8_t* CollectiveCall::member_slot(int rank, std::size_t bytes) {
  return window()->slot(rank, bytes);
}

bool CollectiveCall::members_outnumber_cores() { return window()->members_outnumber_cores(); }

bool CollectiveCall::can_read_members() { return window()->can_read_members(); }

void CollectiveCall::read_member_memory(int rank, uint64_t address, void* local,
                                        std::size_t bytes) {
  if (int error = window()->read_member(rank, address, local, bytes)) {
    core::OpInfo info = window_info(rank);
    info.bytes = static_cast<int64_t>(bytes);
    throw Error(ErrorCode::kSystem,
                "reading " + std::to_string(bytes) + " bytes from rank " + std::to_string(rank) +
                    "'s memory failed: " + std::strerror(error),
                comm_.context_for(info));
  }
}

void CollectiveCall::fail_member_record(int rank, const char* what,
                                        const transport::RecordFault& fault) {
  comm_.fail_window_record(*window(), rank, what, fault.to_string(), window_info(rank));
}

}  // namespace weft::coll
