// AllToAllHeader — what every member of a same-host all_to_all publishes at the start of its
// round-0 slot, and decode_all_to_all_header, which checks one member's header as a pure
// function of its bytes before anything of it is used. Another process wrote it, in memory it
// can change at any time: a value no weft rank publishes yields a RecordFault (the collective
// then fails naming the member, the field, the value and the limit), never a loop of 2^64
// rounds or an output left half written without an error.
//
// Layout (8-byte words, p members): the member's largest send; its flags; then per member d
// the bytes it sends to d, the address of those bytes in its memory, and the bytes it expects
// from d (so that every member, not only the receiver, sees a disagreement). Padded to a
// cache line.
//
// What a reader relies on, and where it is checked:
//   largest send   the number of rounds all members make: exactly the largest of the member's
//                  sends (decode_all_to_all_header), each of which is exactly what its
//                  receiver expects (the split-size check that follows, a mismatch error)
//   flags          which path the group takes: only known bits, and "no data in round 0" only
//                  from a member that can read directly and sends pieces that large
//   sizes          at most 2^47 bytes (no process addresses more): a larger one is a broken
//                  header, not two ranks that disagree
//   address        read with process_vm_readv into this rank's buffer, for the bytes this rank
//                  expects (never the size in the header): not null, not wrapping
//                  (check_direct_read_address); the kernel checks the rest
// Cost: p compares per member, on words the split-size check reads anyway.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transport/frame_header.h"
#include "transport/shm/record_fault.h"

namespace weft::coll {

struct AllToAllHeader {
  explicit AllToAllHeader(int p) : p(static_cast<std::size_t>(p)) {}
  static constexpr uint64_t kCanReadDirectly = 1;
  static constexpr uint64_t kNoDataInRoundZero = 2;
  static constexpr uint64_t kKnownFlags = kCanReadDirectly | kNoDataInRoundZero;
  std::size_t p;
  std::size_t bytes() const { return (8 * (2 + 3 * p) + 63) / 64 * 64; }
  static uint64_t word(const uint8_t* slot, std::size_t index) {
    uint64_t value;
    std::memcpy(&value, slot + 8 * index, 8);
    return value;
  }
  static void set_word(uint8_t* slot, std::size_t index, uint64_t value) {
    std::memcpy(slot + 8 * index, &value, 8);
  }
  uint64_t largest(const uint8_t* slot) const { return word(slot, 0); }
  uint64_t flags(const uint8_t* slot) const { return word(slot, 1); }
  uint64_t sends_to(const uint8_t* slot, int d) const { return word(slot, 2 + d); }
  uint64_t address_for(const uint8_t* slot, int d) const { return word(slot, 2 + p + d); }
  uint64_t expects_from(const uint8_t* slot, int s) const { return word(slot, 2 + 2 * p + s); }
  void set_largest(uint8_t* slot, uint64_t v) const { set_word(slot, 0, v); }
  void set_flags(uint8_t* slot, uint64_t v) const { set_word(slot, 1, v); }
  void set_sends_to(uint8_t* slot, int d, uint64_t v) const { set_word(slot, 2 + d, v); }
  void set_address_for(uint8_t* slot, int d, uint64_t v) const { set_word(slot, 2 + p + d, v); }
  void set_expects_from(uint8_t* slot, int s, uint64_t v) const {
    set_word(slot, 2 + 2 * p + s, v);
  }
};

// What a reader takes from a member's header: read once, here, so that what was checked is what
// is used (the member could rewrite the header meanwhile).
struct AllToAllHeaderView {
  transport::RecordFault fault;  // set: nothing else is meaningful
  uint64_t largest = 0;
  bool can_read_directly = false;
  bool no_data_in_round_zero = false;
};

// The header at `slot` of a group of `p` members whose pieces go by direct reads from
// `direct_from` bytes (the same on every member). Inline: every uneven all_to_all runs it.
inline AllToAllHeaderView decode_all_to_all_header(const uint8_t* slot, int p,
                                                   uint64_t direct_from) {
  const AllToAllHeader header(p);
  AllToAllHeaderView view;
  view.largest = header.largest(slot);
  const uint64_t flags = header.flags(slot);
  uint64_t sends_most = 0, expects_most = 0;
  for (int d = 0; d < p; ++d) {
    const uint64_t sends = header.sends_to(slot, d);
    sends_most = sends > sends_most ? sends : sends_most;
    const uint64_t expects = header.expects_from(slot, d);
    expects_most = expects > expects_most ? expects : expects_most;
  }
  if (sends_most > transport::kLargestMessageBytes) {
    view.fault = transport::record_fault("bytes sent to one member", sends_most, "at most",
                                         transport::kLargestMessageBytes);
  } else if (expects_most > transport::kLargestMessageBytes) {
    view.fault = transport::record_fault("bytes expected from one member", expects_most, "at most",
                                         transport::kLargestMessageBytes);
  } else if (view.largest != sends_most) {
    view.fault = transport::record_fault("largest send", view.largest,
                                         "exactly (its largest piece)", sends_most);
  } else if (flags & ~AllToAllHeader::kKnownFlags) {
    view.fault = transport::record_fault("flags", flags, "at most", AllToAllHeader::kKnownFlags);
  } else if ((flags & AllToAllHeader::kNoDataInRoundZero) &&
             !(flags & AllToAllHeader::kCanReadDirectly)) {
    view.fault = transport::record_fault("flags", flags, "with no data in round 0, exactly",
                                         AllToAllHeader::kKnownFlags);
  } else if ((flags & AllToAllHeader::kNoDataInRoundZero) && view.largest < direct_from) {
    view.fault = transport::record_fault(
        "largest send", view.largest,
        "with no data in round 0, at least (the size of direct reads)", direct_from);
  }
  view.can_read_directly = flags & AllToAllHeader::kCanReadDirectly;
  view.no_data_in_round_zero = flags & AllToAllHeader::kNoDataInRoundZero;
  return view;
}

// The address a member published for the `bytes` this rank reads from its memory.
inline transport::RecordFault check_direct_read_address(uint64_t address, uint64_t bytes) {
  if (address == 0) return transport::record_fault("buffer address", address, "above", 0);
  if (address + bytes < address) {
    return transport::record_fault("buffer address", address,
                                   "at most (to end within the address space)", ~bytes);
  }
  return {};
}

}  // namespace weft::coll
