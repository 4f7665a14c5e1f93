#include "core/clock_alignment.h"

#include <chrono>
#include <limits>
#include <string>

#include "core/op_record.h"

namespace weft::core {

namespace {

constexpr int kPings = 4;
// A rank whose WEFT_TRACE is unset never pings: rank 0 must not wait for it as long as for a
// rendezvous.
constexpr std::chrono::milliseconds kPatience{10'000};

}  // namespace

int64_t estimate_clock_offset_ns(Store& store, int rank, int size,
                                 const std::vector<bool>& shares_clock_with_rank0) {
  int64_t elsewhere = 0;
  for (int peer = 1; peer < size; ++peer) elsewhere += shares_clock_with_rank0[peer] ? 0 : 1;
  if (elsewhere == 0 || (rank != 0 && shares_clock_with_rank0[rank])) return 0;
  // A round number of its own, so that a second world on the same store (a job that joins
  // twice) does not read this one's keys: rank 0 and each rank elsewhere add once per round.
  int64_t round = (store.add("weft/clock/arrivals", 1) - 1) / (elsewhere + 1);
  std::string prefix = "weft/clock/" + std::to_string(round) + "/";
  if (rank == 0) {
    for (int peer = 1; peer < size; ++peer) {
      if (shares_clock_with_rank0[peer]) continue;
      for (int ping = 0; ping < kPings; ++ping) {
        std::string key = prefix + std::to_string(peer) + "/" + std::to_string(ping);
        store.wait({key + "/ping"}, kPatience);
        store.set(key + "/pong", to_bytes(std::to_string(steady_now_ns())));
      }
    }
    return 0;
  }
  int64_t best_round_trip = std::numeric_limits<int64_t>::max();
  int64_t offset = 0;
  for (int ping = 0; ping < kPings; ++ping) {
    std::string key = prefix + std::to_string(rank) + "/" + std::to_string(ping);
    int64_t sent = steady_now_ns();
    store.set(key + "/ping", to_bytes("1"));
    store.wait({key + "/pong"}, kPatience);
    int64_t theirs = std::stoll(to_string(store.get(key + "/pong")));
    int64_t received = steady_now_ns();
    if (received - sent < best_round_trip) {
      best_round_trip = received - sent;
      offset = theirs - (sent + received) / 2;
    }
  }
  return offset;
}

}  // namespace weft::core
