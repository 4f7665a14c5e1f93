// Checks of the values LocalWindow reads from the parts of its segment that other members
// write, as pure functions of those values (unit-testable, no shared memory). A buggy member
// can write anything there: a value no weft rank writes yields a RecordFault (the window is
// then poisoned and the group fails naming the member, the field, the value and the limit).
//
// The rest of what a member reads from another is safe by construction (docs/RELIABILITY.md,
// the shared-memory window's table): round words and stamps are only compared, stamps are compared
// with this member's own before any slot is read, and every length, offset and index a member
// copies with comes from its own call and the window's layout, never from another member.
#pragma once

#include <cstdint>

#include "transport/shm/record_fault.h"

namespace weft::transport {

// The pid a member published in its control block: its liveness watch (a pidfd) and the
// single-copy reads from its memory go to that process. 0 would be "nobody" to the watch (a
// death never noticed), a negative one a process group.
inline RecordFault check_member_pid(int32_t pid) {
  if (pid <= 0) return record_fault("pid", static_cast<uint32_t>(pid), "at least", 1);
  return {};
}

// The segment's header as rank 0 wrote it, against what this member derived itself.
inline RecordFault check_window_header(uint32_t magic, uint32_t expected_magic, uint32_t members,
                                       uint32_t expected_members, uint64_t slot_bytes,
                                       uint64_t expected_slot_bytes) {
  if (magic != expected_magic) {
    return record_fault("magic", magic, "exactly", expected_magic);
  }
  if (members != expected_members) {
    return record_fault("member count", members, "exactly", expected_members);
  }
  if (slot_bytes != expected_slot_bytes) {
    return record_fault("slot bytes", slot_bytes, "exactly", expected_slot_bytes);
  }
  return {};
}

// The member named by the window's poison word (1 + the rank that poisoned it first, with a
// flag bit while it writes its reason): -1 when the word names no member of `members`. Only
// ever printed, but printed as a rank.
inline int poisoner_of(uint32_t poisoned, uint32_t being_written_flag, int members) {
  const uint32_t rank_plus_one = poisoned & ~being_written_flag;
  if (rank_plus_one == 0 || rank_plus_one > static_cast<uint32_t>(members)) return -1;
  return static_cast<int>(rank_plus_one - 1);
}

}  // namespace weft::transport
