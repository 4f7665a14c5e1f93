// ShrinkAgreement — how the survivors of a group agree, through the job's store, on the members
// still alive (ProcessGroup::shrink, as ULFM's MPI_Comm_shrink and NCCL's ncclCommShrink).
//
// One round per (group context, epoch), its keys under "weft/shrink/<context>/<epoch>/":
//   alive    the members that called shrink, "r," each: every caller appends itself
//            (compare_set in a loop: the store has no append)
//   members  the decision, the group ranks of the new group ("0,1,3,"), written once
// Each caller appends itself to `alive`, then polls until a decision is published or it can
// make one. A member is out when this rank's transport knows it died or left (even if it said
// alive before it did); in when it said alive; undecided otherwise, until the deadline for
// members passes, after which it is out. The transport is asked to connect to every member not
// heard of, so that a dead one's refused connection tells. The first caller to decide publishes
// with compare_set on the empty `members` key, and every caller (that one too) adopts what the
// key then holds: one decision for all, even when the callers' views differ (a death one rank
// has heard of and another not yet). A member decided in that has died meanwhile fails the new
// group's first collective, and a further shrink removes it.
//
// Time: members are waited for until `timeout` after the call; the store calls (two round
// trips per poll, whatever the group size) end by then plus a grace of a quarter of the
// timeout (1 s to 5 s), in which a decision made at the deadline is published and read. A
// store that does not answer in that time is a kTimeout naming the shrink.
//
// Thread-safety: one object per shrink call, used by the calling thread only.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "weft/store.h"

namespace weft::api {

class ShrinkAgreement {
 public:
  using Clock = std::chrono::steady_clock;

  // `group` is the group being shrunk (already aborted); `epoch` its shrink number.
  ShrinkAgreement(core::Communicator& group, int epoch, std::chrono::milliseconds timeout);

  // The group ranks (of the shrunk group) of the new group's members, ascending. They include
  // this rank unless it was left out (it came too late, or a survivor saw it fail).
  std::vector<int> agree();

 private:
  // Appends this rank to the round's `alive` list.
  void say_alive();
  // The list a key holds now, without waiting (empty when the key is missing).
  std::vector<int> read_list(const std::string& key);
  // Has the transport find out whether the members not heard of yet are gone: one that shared
  // only a memory window with this rank may have had no connection whose end would tell.
  void probe_the_silent(const std::vector<int>& alive);
  // The members, when every one is known to be in or out; empty while some are undecided.
  std::vector<int> decide(const std::vector<int>& alive, bool members_deadline_passed) const;
  // Publishes `members` unless someone did first; returns the published decision.
  std::vector<int> publish(const std::vector<int>& members);
  // A store failure, as an error of this shrink (the store's error kept as the cause).
  [[noreturn]] void fail_store_call(const Error& cause, const char* what) const;

  core::Communicator& group_;
  int epoch_;
  std::chrono::milliseconds timeout_;
  Clock::time_point members_deadline_;
  Clock::time_point store_deadline_;
  std::string alive_key_;
  std::string members_key_;
  std::vector<bool> probed_;  // per group rank
};

// "0,1,3," <-> {0, 1, 3}: the lists the round's keys hold. decode throws kInternal, naming
// the key, on anything else.
Bytes encode_rank_list(const std::vector<int>& ranks);
std::vector<int> decode_rank_list(const Bytes& bytes, const std::string& key);

}  // namespace weft::api
