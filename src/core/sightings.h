// Sightings — what each member of a group was last seen doing when a wait of the group timed
// out (from the progress board, core/progress_board.h, or the group's shared-memory window),
// and the sentences that turn them into "which ranks had not reached which op".
//
// Pure functions of their arguments: no store, no clock, no group (unit-tested on their own).
// The board's entries are text, written and parsed only here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::core {

// One member, as seen. "Seen in" a collective means: it was waiting in it at some point (the
// board), or arrived at one of its rounds (the window); nothing says it is still there, unless
// `left` is false and the op is the one the observer waits in.
struct Sighting {
  bool known = false;   // false: nobody could tell (the store did not answer in time)
  int64_t seq = -1;     // the last collective it was seen in; -1: none
  std::string op;       // that collective's name
  bool left = false;    // it was seen leaving that collective (done or failed)
  std::string waiting;  // the point-to-point op it waits in ("recv from rank 2"), or ""
};

// The board's entry for a member's collectives: "<seq> <op> waiting" or "<seq> <op> left".
std::string collective_entry(const char* op, int64_t seq, bool left);
// Fills seq, op and left from such an entry (an unreadable one leaves them alone).
void read_collective_entry(const std::string& entry, Sighting& sighting);
// "recv from rank 2", "recv from any rank", "send to rank 0".
std::string point_to_point_entry(const char* op, int peer);

// "rank 1", "ranks 0, 2", "ranks 0-3, 5": runs of three or more as ranges.
std::string rank_list(const std::vector<int>& ranks);

// Why a collective (`op` #`seq`) timed out, from every member's sighting (index = group rank;
// the caller's own included): "rank 1 had not reached it (last seen in broadcast #4); ranks 0,
// 2 were waiting in it". Also names members seen in a later collective or in another one with
// this number (the ranks disagree on the order of their calls), and the ones nobody could tell
// about (unless `name_unknown` is false: a caller that only asked about some members). The op
// is "it": the caller's sentence names it first.
std::string describe_stall(const char* op, int64_t seq, const std::vector<Sighting>& members,
                           bool name_unknown = true);
// The ranks `describe_stall` would say had not reached `op` #`seq`.
std::vector<int> ranks_behind(const char* op, int64_t seq, const std::vector<Sighting>& members);

// What a point-to-point wait's peer was doing: "rank 1 was waiting in recv from rank 0",
// "rank 1 was waiting in all_reduce #5", or that it was seen in no wait of the group. Empty
// when unknown.
std::string describe_peer(int peer, const Sighting& sighting);

}  // namespace weft::core
