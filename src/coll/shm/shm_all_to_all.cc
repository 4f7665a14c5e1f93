#include <algorithm>
#include <cstring>
#include <exception>

#include "coll/member_list.h"
#include "coll/shm/all_to_all_header.h"
#include "coll/shm/shm_collectives.h"
#include "util/stream_copy.h"
#include "weft/error.h"

namespace weft::coll {

namespace {

// Pieces from this size on are read straight from the senders' buffers when every member can
// (one copy instead of two through the slots, for one more round that keeps the inputs in
// place until every reader is done). Below it the extra round costs more than the copy saves;
// far more when the members outnumber the cores, where every round also waits for a member
// to be scheduled (docs/perf-history.md has the figures behind both thresholds).
std::size_t read_directly_from(CollectiveCall& call) {
  return call.members_outnumber_cores() ? 512 * 1024 : 64 * 1024;
}

// Whether two byte ranges share a byte.
bool overlap(const uint8_t* a, std::size_t a_bytes, const uint8_t* b, std::size_t b_bytes) {
  return a_bytes && b_bytes && a < b + b_bytes && b < a + a_bytes;
}

// How far from the buffer's start its pieces (`bytes` at `offsets`) reach.
std::size_t extent(std::span<const std::size_t> bytes, std::span<const std::size_t> offsets) {
  std::size_t end = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i]) end = std::max(end, offsets[i] + bytes[i]);
  }
  return end;
}

// What the members agree on after round 0.
struct Agreement {
  std::size_t largest = 0;       // the largest piece any member sends
  bool read_directly = false;    // every member reads its pieces from the senders' buffers
  bool round_zero_used = false;  // round 0 carries every member's first piece
};

// Throws, on every member alike, when a member sends another one a different number of bytes
// than that one expects.
void check_split_sizes(CollectiveCall& call, const AllToAllHeader& header) {
  for (int d = 0; d < call.size(); ++d) {
    for (int s = 0; s < call.size(); ++s) {
      uint64_t sent = header.sends_to(call.member_slot(s), d);
      uint64_t expected = header.expects_from(call.member_slot(d), s);
      if (sent != expected) {
        throw Error(ErrorCode::kMismatch, "all_to_all split sizes disagree: rank " +
                                              std::to_string(s) + " sends " + std::to_string(sent) +
                                              " bytes to rank " + std::to_string(d) +
                                              ", which expects " + std::to_string(expected));
      }
    }
  }
}

// Reads every member's header: first whether each is one a weft rank could have written (a
// broken one fails the call naming that member, which poisons the window), then whether the
// split sizes agree (a mismatch between the callers).
Agreement agree(CollectiveCall& call, const AllToAllHeader& header,
                std::size_t read_directly_from) {
  Agreement agreed;
  bool all_can_read = true, all_sent_data = true;
  for (int m = 0; m < call.size(); ++m) {
    const AllToAllHeaderView view =
        decode_all_to_all_header(call.member_slot(m), call.size(), read_directly_from);
    if (view.fault) [[unlikely]]
      call.fail_member_record(m, "an all_to_all header", view.fault);
    agreed.largest = std::max<std::size_t>(agreed.largest, view.largest);
    all_can_read = all_can_read && view.can_read_directly;
    all_sent_data = all_sent_data && !view.no_data_in_round_zero;
  }
  check_split_sizes(call, header);
  agreed.read_directly = all_can_read && agreed.largest >= read_directly_from;
  agreed.round_zero_used = all_sent_data;
  return agreed;
}

// Copies my pieces from the others out of their buffers, then waits in one more round until
// every member has done so (only then may anyone return and change its input).
void read_directly(CollectiveCall& call, const AllToAllHeader& header, uint8_t* out,
                   std::span<const std::size_t> recv_bytes,
                   std::span<const std::size_t> recv_offsets) {
  const int p = call.size();
  const int me = call.rank();
  // The addresses, read once: what is checked is what is read from.
  MemberList<uint64_t> addresses(p, 0);
  for (int s = 0; s < p; ++s) {
    if (s == me || recv_bytes[s] == 0) continue;
    addresses[s] = header.address_for(call.member_slot(s), me);
    if (transport::RecordFault fault = check_direct_read_address(addresses[s], recv_bytes[s]))
        [[unlikely]] {
      call.fail_member_record(s, "an all_to_all header", fault);
    }
  }
  std::exception_ptr failed;
  try {
    // Everyone starts with a different sender, so that no sender is read by all at once.
    for (int i = 1; i < p; ++i) {
      int s = (me + i) % p;
      if (recv_bytes[s] == 0) continue;
      call.read_member_memory(s, addresses[s], out + recv_offsets[s], recv_bytes[s]);
    }
  } catch (const Error&) {
    failed = std::current_exception();
  }
  // A sender that gave up (a split-size mismatch it saw) may have released its buffer: its
  // error, which this round throws, explains a failed read better than the read does.
  call.finish_round();
  if (failed) std::rethrow_exception(failed);
}

// An even call (every member sends `block` bytes to each, in rank order, with nothing between;
// its stamp carries the count, so all agree) small enough for the arrival lines: one round, no
// header. In place too: my line keeps my input while my output is written.
void inline_round(CollectiveCall& call, const uint8_t* in, std::size_t block, uint8_t* out) {
  const int p = call.size();
  const std::size_t total = block * static_cast<std::size_t>(p);
  const std::size_t mine = static_cast<std::size_t>(call.rank()) * block;
  uint8_t* line = call.round_slot(total);
  // An empty call (block 0) arrives and waits like any other but copies nothing: its buffers
  // may be null, and memcpy must not be given a null pointer, even for 0 bytes.
  if (block != 0) std::memcpy(line, in, total);
  call.arrive_round();
  if (block != 0) std::memcpy(out + mine, line + mine, block);
  call.wait_round();
  for (int s = 0; s < p && block != 0; ++s) {
    if (s != call.rank()) std::memcpy(out + s * block, call.member_slot(s, total) + mine, block);
  }
}

// Bytes of each member's region of a slot of `budget` bytes after `header_bytes`: whole cache
// lines, since glibc copies large blocks with `rep movsb`, which slows down several times when
// source and destination are not equally aligned (a 1 MiB all_to_all ran at a quarter of the
// speed of an all_gather with regions 32 bytes off).
std::size_t region_bytes(std::size_t budget, std::size_t header_bytes, int p) {
  const std::size_t share = (budget - std::min(budget, header_bytes)) / static_cast<std::size_t>(p);
  return share >= 64 ? share / 64 * 64 : std::max<std::size_t>(1, share);
}

// An even call whose blocks are below the size of direct reads: every member derives the same
// rounds from the block (its stamp carries the count, and the threshold is the same on every
// member), so no round-0 header is written, read or checked: a small call saves a sixth of its
// time. Region d of my slot holds
// piece k of my block for d; in place, my own block goes through my slot too, and a round's
// outputs overwrite only input pieces already copied into the slot.
void even_rounds(CollectiveCall& call, const uint8_t* in, std::size_t block, uint8_t* out) {
  const int p = call.size();
  const int me = call.rank();
  const std::size_t total = block * static_cast<std::size_t>(p);
  const bool in_place = overlap(in, total, out, total);
  const std::size_t region = region_bytes(call.round_bytes(), 0, p);
  const std::size_t rounds = std::max<std::size_t>(1, (block + region - 1) / region);
  const std::size_t mine = static_cast<std::size_t>(me) * block;
  for (std::size_t k = 0; k < rounds; ++k) {
    const std::size_t at = k * region, n = std::min(region, block - std::min(block, at));
    uint8_t* slot = call.round_slot();
    const std::size_t written = n * static_cast<std::size_t>(in_place ? p : p - 1);
    for (int d = 0; d < p && n; ++d) {
      if (d == me && !in_place) continue;
      call.fill_slot(slot + d * region, in + d * block + at, n, written);
    }
    call.arrive_round();
    if (!in_place && n) std::memcpy(out + mine + at, in + mine + at, n);
    call.wait_round();
    for (int s = 0; s < p && n; ++s) {
      if (s == me && !in_place) continue;
      std::memcpy(out + s * block + at, call.member_slot(s) + me * region, n);
    }
  }
}

}  // namespace

// Round 0 carries every member's header (above). Then either each member
// reads its pieces straight from the senders' buffers (read_directly), or the data goes through the
// slots: in round k, after the header in round 0, region d of a member's slot holds piece k of what
// it sends to d. Split sizes differ by member, so the number of rounds and the path are agreed from
// what all published in round 0. A member that may read directly and has large pieces leaves round
// 0 without data; should the group then copy through the slots after all (some member cannot read
// directly), everyone starts its data in round 1.
void shm_all_to_all(CollectiveCall& call, const void* input,
                    std::span<const std::size_t> send_bytes,
                    std::span<const std::size_t> send_offsets, void* output,
                    std::span<const std::size_t> recv_bytes,
                    std::span<const std::size_t> recv_offsets) {
  const int p = call.size();
  const int me = call.rank();
  const auto* in = static_cast<const uint8_t*>(input);
  auto* out = static_cast<uint8_t*>(output);
  if (p == 1) {
    if (send_bytes[0]) std::memmove(out + recv_offsets[0], in + send_offsets[0], send_bytes[0]);
    return;
  }
  const AllToAllHeader header(p);
  const std::size_t region = region_bytes(call.round_bytes(), header.bytes(), p);
  const std::size_t my_largest = *std::max_element(send_bytes.begin(), send_bytes.end());
  // In place, my input changes as my output is written: readers must not read it directly, and
  // my own piece must go through the slots with the others.
  const bool in_place =
      overlap(in, extent(send_bytes, send_offsets), out, extent(recv_bytes, recv_offsets));
  const bool can_read_directly = !in_place && call.can_read_members();
  const std::size_t direct_from = read_directly_from(call);
  const bool data_in_round_zero = !(can_read_directly && my_largest >= direct_from);
  auto piece_of = [&](std::size_t total, std::size_t k) {
    return std::min(region, total - std::min(total, k * region));
  };
  auto copy_in = [&](uint8_t* slot, std::size_t k) {
    std::size_t written = 0;
    for (int d = 0; d < p; ++d) {
      if (d != me || in_place) written += piece_of(send_bytes[d], k);
    }
    for (int d = 0; d < p; ++d) {
      if (d == me && !in_place) continue;
      if (std::size_t n = piece_of(send_bytes[d], k)) {
        call.fill_slot(slot + header.bytes() + d * region, in + send_offsets[d] + k * region, n,
                       written);
      }
    }
  };
  auto copy_out = [&](std::size_t k) {
    for (int s = 0; s < p; ++s) {
      if (s == me && !in_place) continue;
      if (std::size_t n = piece_of(recv_bytes[s], k)) {
        std::memcpy(out + recv_offsets[s] + k * region,
                    call.member_slot(s) + header.bytes() + me * region, n);
      }
    }
  };

  uint8_t* slot = call.round_slot();
  header.set_largest(slot, my_largest);
  header.set_flags(slot, (can_read_directly ? AllToAllHeader::kCanReadDirectly : 0) |
                             (data_in_round_zero ? 0 : AllToAllHeader::kNoDataInRoundZero));
  for (int d = 0; d < p; ++d) {
    header.set_sends_to(slot, d, send_bytes[d]);
    header.set_address_for(slot, d, reinterpret_cast<uintptr_t>(in + send_offsets[d]));
    header.set_expects_from(slot, d, recv_bytes[d]);
  }
  if (data_in_round_zero) copy_in(slot, 0);
  call.arrive_round();
  if (!in_place) {
    // My own piece needs nobody: copied while the others arrive. (Sizes that disagree fail
    // below; until then, never more than either side allows.)
    util::stream_copy(out + recv_offsets[me], in + send_offsets[me],
                      std::min(send_bytes[me], recv_bytes[me]));
  }
  call.wait_round();
  const Agreement agreed = agree(call, header, direct_from);
  if (agreed.read_directly) return read_directly(call, header, out, recv_bytes, recv_offsets);
  const std::size_t rounds = std::max<std::size_t>(1, (agreed.largest + region - 1) / region);
  std::size_t k = 0;
  if (agreed.round_zero_used) copy_out(k++);
  for (; k < rounds; ++k) {
    copy_in(call.round_slot(), k);
    call.finish_round();
    copy_out(k);
  }
}

void shm_even_all_to_all(CollectiveCall& call, const void* input, void* output, std::size_t block) {
  const int p = call.size();
  const auto* in = static_cast<const uint8_t*>(input);
  auto* out = static_cast<uint8_t*>(output);
  if (p > 1 && block * static_cast<std::size_t>(p) <= call.inline_bytes()) {
    return inline_round(call, in, block, out);
  }
  if (p > 1 && block < read_directly_from(call)) return even_rounds(call, in, block, out);
  MemberList<std::size_t> bytes(p, block), offsets = back_to_back_offsets(p, block);
  shm_all_to_all(call, input, bytes, offsets, output, bytes, offsets);
}

}  // namespace weft::coll
