// A member of a same-host group that publishes, in its part of the group's shared-memory window,
// a value no weft rank writes (docs/RELIABILITY.md, the shared-memory window's table): every other
// member fails the collective with a peer_failure naming it, the field, the value and the
// limit, and the member itself learns of it from the poisoned window, instead of members
// looping through 2^62 rounds, reading a null address or leaving an output half written.
//
// The buggy member runs all_to_all's first round by hand (tests/support/collective_harness.h):
// it writes a header as shm_all_to_all does, spoils one field, and arrives. The validators
// themselves: tests/unit/window_record_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "coll/shm/all_to_all_header.h"
#include "coll/shm/shm_collectives.h"
#include "support/collective_harness.h"
#include "support/errors.h"
#include "support/thread_ranks.h"

namespace weft {
namespace {

using coll::AllToAllHeader;
using testing::error_of;
using testing::make_call;
using testing::run_ranks_leaving_in_turn;
using testing::ThreadRanksOptions;

constexpr int kWorld = 3;
constexpr int kBuggy = 1;

struct Spoiled {
  const char* name;
  std::size_t block;  // bytes every member sends to each
  // Spoils the buggy member's header (an honest one's, as written) at its slot.
  std::function<void(const AllToAllHeader&, uint8_t*)> spoil;
  std::string named;  // what the others' error must say
};

// Runs an all_to_all of `block` bytes to each member; the buggy member publishes a spoiled
// header in the first round. Every rank leaves only once all are done (a rank that leaves
// fails the others' collectives with another error): run_ranks_leaving_in_turn.
void run_with_a_buggy_member(const Spoiled& spoiled) {
  ThreadRanksOptions options;
  options.timeout = std::chrono::milliseconds(3000);  // bounds a run without the checks
  run_ranks_leaving_in_turn(
      kWorld,
      [&](ProcessGroup& group) {
        const int p = group.size(), me = group.rank();
        const std::size_t block = spoiled.block;
        std::vector<std::size_t> bytes(p, block), offsets(p);
        for (int m = 0; m < p; ++m) offsets[m] = static_cast<std::size_t>(m) * block;
        std::vector<uint8_t> input(p * block, static_cast<uint8_t>(me)), output(p * block);
        // An uneven call's signature (count 0), as the API makes it for split sizes.
        auto call = make_call(group, "all_to_all", core::OpKind::kAllToAll, DType::kUInt8, 0);
        auto started = std::chrono::steady_clock::now();
        Error error = error_of([&] {
          if (me != kBuggy) {
            coll::shm_all_to_all(call, input.data(), bytes, offsets, output.data(), bytes, offsets);
            return;
          }
          const AllToAllHeader header(p);
          uint8_t* slot = call.round_slot();
          header.set_largest(slot, block);
          header.set_flags(slot, block >= 512 * 1024 ? AllToAllHeader::kKnownFlags : 0);
          for (int d = 0; d < p; ++d) {
            header.set_sends_to(slot, d, block);
            header.set_address_for(slot, d, reinterpret_cast<uintptr_t>(input.data() + offsets[d]));
            header.set_expects_from(slot, d, block);
          }
          spoiled.spoil(header, slot);
          call.arrive_round();
          call.wait_round();
          // The others fail in this round: the next never completes.
          call.finish_round();
        });
        EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2))
            << spoiled.name;
        EXPECT_EQ(error.code(), ErrorCode::kPeerFailure) << spoiled.name << ": " << error.what();
        const std::string what = error.what();
        EXPECT_NE(what.find("rank 1 published an all_to_all header"), std::string::npos)
            << spoiled.name << ": " << what;
        EXPECT_NE(what.find(spoiled.named), std::string::npos) << spoiled.name << ": " << what;
        if (me != kBuggy) {
          EXPECT_EQ(error.context().peer, kBuggy) << what;
        } else {
          EXPECT_NE(what.find("gave up this collective"), std::string::npos) << what;
        }
        // The group's collectives stay failed, with that cause.
        std::vector<float> data(4, 1.0f);
        Error after = error_of([&] { group.all_reduce(data); });
        EXPECT_NE(std::string(after.what()).find(spoiled.named), std::string::npos) << after.what();
      },
      options);
}

TEST(ShmBuggyMember, AHugeLargestSendFailsEveryMemberNamingIt) {
  // Without the check every honest member would go on through 2^62 / 349 KiB rounds (about
  // 10^13), long after the buggy member left them.
  run_with_a_buggy_member(
      {"largest", 64,
       [](const AllToAllHeader& h, uint8_t* slot) { h.set_largest(slot, uint64_t{1} << 62); },
       "largest send 4611686018427387904 (exactly (its largest piece) 64)"});
}

TEST(ShmBuggyMember, AnUnderstatedLargestSendFailsEveryMemberNamingIt) {
  // Here the honest members' own largest sends hide it; a member whose pieces are the largest
  // would make the group stop rounds early and return with outputs half written.
  run_with_a_buggy_member({"understated", 1u << 20,
                           [](const AllToAllHeader& h, uint8_t* slot) {
                             h.set_flags(slot, 0);
                             h.set_largest(slot, 1);
                           },
                           "largest send 1 (exactly (its largest piece) 1048576)"});
}

TEST(ShmBuggyMember, ASizeNoProcessHoldsIsAPeerFailureNotAMismatch) {
  run_with_a_buggy_member({"sends", 64,
                           [](const AllToAllHeader& h, uint8_t* slot) {
                             h.set_sends_to(slot, 2, ~uint64_t{0});
                             h.set_largest(slot, ~uint64_t{0});
                           },
                           "bytes sent to one member 18446744073709551615 (at most "
                           "140737488355328)"});
}

TEST(ShmBuggyMember, UnknownFlagsFailEveryMemberNamingThem) {
  run_with_a_buggy_member({"flags", 64,
                           [](const AllToAllHeader& h, uint8_t* slot) { h.set_flags(slot, 0xf0); },
                           "flags 240 (at most 3)"});
}

TEST(ShmBuggyMember, ANullAddressToReadFromFailsTheReadersNamingIt) {
  // Large pieces (from 512 KiB when 3 members outnumber the cores): the others read them
  // straight from the buggy member's memory, where its header says they are.
  run_with_a_buggy_member({"address", 1u << 20,
                           [](const AllToAllHeader& h, uint8_t* slot) {
                             h.set_address_for(slot, 0, 0);
                             h.set_address_for(slot, 2, 0);
                           },
                           "buffer address 0 (above 0)"});
}

}  // namespace
}  // namespace weft
