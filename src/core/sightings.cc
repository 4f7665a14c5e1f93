#include "core/sightings.h"

#include <sstream>

namespace weft::core {

namespace {

// Where a member stood relative to the collective that timed out.
enum class Place { kUnknown, kBehind, kThere, kOtherOp, kAhead };

Place place_of(const char* op, int64_t seq, const Sighting& s) {
  if (!s.known) return Place::kUnknown;
  if (s.seq < seq) return Place::kBehind;
  if (s.seq > seq) return Place::kAhead;
  return s.op == op ? Place::kThere : Place::kOtherOp;
}

std::string op_and_seq(const std::string& op, int64_t seq) {
  return op + " #" + std::to_string(seq);
}

// What is known of a member that had not reached the op: the wait it is in, else the last
// collective it was seen in.
std::string last_seen(const Sighting& s) {
  if (!s.waiting.empty()) return "waiting in " + s.waiting;
  if (s.seq >= 0) return "last seen in " + op_and_seq(s.op, s.seq);
  return "";
}

// Past this many, a list of details ends in "...": an error message stays one readable line.
constexpr std::size_t kMaxDetails = 8;

std::string behind_clause(const std::vector<int>& ranks, const std::vector<Sighting>& members) {
  std::string text = rank_list(ranks) + " had not reached it";
  if (ranks.size() == 1) {
    std::string seen = last_seen(members[ranks.front()]);
    return seen.empty() ? text : text + " (" + seen + ")";
  }
  std::string details;
  std::size_t listed = 0;
  for (int r : ranks) {
    std::string seen = last_seen(members[r]);
    if (seen.empty()) continue;
    if (listed++ == kMaxDetails) {
      details += "; ...";
      break;
    }
    details += (details.empty() ? "" : "; ") + ("rank " + std::to_string(r) + " " + seen);
  }
  return details.empty() ? text : text + " (" + details + ")";
}

// One clause per member, for places that are rare and say something different for each.
std::string each_clause(const std::vector<int>& ranks, const std::vector<Sighting>& members,
                        const char* verb) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size() && i < kMaxDetails; ++i) {
    const Sighting& s = members[ranks[i]];
    text += (text.empty() ? "" : ", ") +
            ("rank " + std::to_string(ranks[i]) + verb + op_and_seq(s.op, s.seq));
  }
  return ranks.size() > kMaxDetails ? text + ", ..." : text;
}

}  // namespace

std::string collective_entry(const char* op, int64_t seq, bool left) {
  return std::to_string(seq) + " " + op + (left ? " left" : " waiting");
}

void read_collective_entry(const std::string& entry, Sighting& sighting) {
  std::istringstream in(entry);
  int64_t seq = -1;
  std::string op, state;
  if (!(in >> seq >> op >> state) || seq < 0) return;
  sighting.seq = seq;
  sighting.op = op;
  sighting.left = state == "left";
}

std::string point_to_point_entry(const char* op, int peer) {
  std::string direction = std::string(op) == "send" ? " to " : " from ";
  return op + direction + (peer >= 0 ? "rank " + std::to_string(peer) : "any rank");
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t end = i + 1;  // [i, end) consecutive
    while (end < ranks.size() && ranks[end] == ranks[end - 1] + 1) ++end;
    if (!text.empty()) text += ", ";
    if (end - i >= 3) {
      text += std::to_string(ranks[i]) + "-" + std::to_string(ranks[end - 1]);
    } else {
      text += std::to_string(ranks[i]);
      if (end - i == 2) text += ", " + std::to_string(ranks[i + 1]);
    }
    i = end;
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + text;
}

std::vector<int> ranks_behind(const char* op, int64_t seq, const std::vector<Sighting>& members) {
  std::vector<int> behind;
  for (int r = 0; r < static_cast<int>(members.size()); ++r) {
    if (place_of(op, seq, members[r]) == Place::kBehind) behind.push_back(r);
  }
  return behind;
}

std::string describe_stall(const char* op, int64_t seq, const std::vector<Sighting>& members,
                           bool name_unknown) {
  std::vector<int> at[5];
  for (int r = 0; r < static_cast<int>(members.size()); ++r) {
    at[static_cast<int>(place_of(op, seq, members[r]))].push_back(r);
  }
  const auto& unknown = at[static_cast<int>(Place::kUnknown)];
  const auto& behind = at[static_cast<int>(Place::kBehind)];
  const auto& there = at[static_cast<int>(Place::kThere)];
  const auto& other_op = at[static_cast<int>(Place::kOtherOp)];
  const auto& ahead = at[static_cast<int>(Place::kAhead)];
  std::vector<std::string> clauses;
  if (!behind.empty()) clauses.push_back(behind_clause(behind, members));
  if (!other_op.empty()) {
    clauses.push_back(each_clause(other_op, members, " was in ") + " instead");
  }
  if (!ahead.empty()) clauses.push_back(each_clause(ahead, members, " was already in "));
  if (!there.empty()) {
    if (there.size() == members.size()) {
      clauses.push_back("every rank was waiting in it");
    } else {
      clauses.push_back(rank_list(there) + (there.size() == 1 ? " was" : " were") +
                        " waiting in it");
    }
  }
  if (name_unknown && !unknown.empty())
    clauses.push_back("nothing is known of " + rank_list(unknown));
  std::string text;
  for (const std::string& clause : clauses) text += (text.empty() ? "" : "; ") + clause;
  return text;
}

std::string describe_peer(int peer, const Sighting& s) {
  if (!s.known) return "";
  std::string who = "rank " + std::to_string(peer);
  if (!s.waiting.empty()) return who + " was waiting in " + s.waiting;
  if (s.seq >= 0 && !s.left) return who + " was waiting in " + op_and_seq(s.op, s.seq);
  return who + " was seen in no wait of this group (busy elsewhere, or stuck outside weft)";
}

}  // namespace weft::core
