#include "api/shrink_agreement.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <thread>

#include "weft/error.h"

namespace weft::api {

namespace {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

// After the members' deadline, the store calls that publish and read the decision still need
// time: a quarter of the timeout, within these bounds.
constexpr milliseconds kMinGrace{1000};
constexpr milliseconds kMaxGrace{5000};

// Polls start fast (survivors usually call within milliseconds of each other) and slow down
// so that a long wait for a late member costs the store little.
constexpr milliseconds kFirstPoll{1};
constexpr milliseconds kLongestPoll{20};

std::string round_prefix(uint64_t context, int epoch) {
  char text[64];
  std::snprintf(text, sizeof text, "weft/shrink/%016llx/%d/",
                static_cast<unsigned long long>(context), epoch);
  return text;
}

bool contains(const std::vector<int>& ranks, int rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

}  // namespace

Bytes encode_rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (int rank : ranks) text += std::to_string(rank) + ",";
  return to_bytes(text);
}

std::vector<int> decode_rank_list(const Bytes& bytes, const std::string& key) {
  std::vector<int> ranks;
  const char* at = reinterpret_cast<const char*>(bytes.data());
  const char* end = at + bytes.size();
  while (at < end) {
    int rank = -1;
    auto [next, problem] = std::from_chars(at, end, rank);
    if (problem != std::errc() || rank < 0 || next == end || *next != ',') {
      throw Error(ErrorCode::kInternal, "shrink: the store key " + key +
                                            " holds something else than a list of ranks: '" +
                                            weft::to_string(bytes) + "'");
    }
    ranks.push_back(rank);
    at = next + 1;
  }
  return ranks;
}

ShrinkAgreement::ShrinkAgreement(core::Communicator& group, int epoch, milliseconds timeout)
    : group_(group), epoch_(epoch), timeout_(timeout) {
  const std::string prefix = round_prefix(group.context_base(), epoch);
  alive_key_ = prefix + "alive";
  members_key_ = prefix + "members";
  probed_.assign(group.size(), false);
  members_deadline_ = Clock::now() + timeout;
  store_deadline_ = members_deadline_ + std::clamp(timeout / 4, kMinGrace, kMaxGrace);
}

std::vector<int> ShrinkAgreement::agree() {
  say_alive();
  milliseconds pause = kFirstPoll;
  for (;;) {
    std::vector<int> published = read_list(members_key_);
    if (!published.empty()) return published;
    bool late = Clock::now() >= members_deadline_;
    std::vector<int> alive = read_list(alive_key_);
    probe_the_silent(alive);
    std::vector<int> members = decide(alive, late);
    if (!members.empty()) return publish(members);
    std::this_thread::sleep_until(std::min(Clock::now() + pause, members_deadline_));
    pause = std::min(pause * 2, kLongestPoll);
  }
}

void ShrinkAgreement::say_alive() {
  const std::string me = std::to_string(group_.rank()) + ",";
  Bytes seen;
  try {
    for (;;) {
      Bytes desired = seen;
      desired.insert(desired.end(), me.begin(), me.end());
      Bytes now =
          group_.world().deadline_store().compare_set(alive_key_, seen, desired, store_deadline_);
      if (now == desired) return;
      seen = std::move(now);  // another member appended first: append to what it wrote
    }
  } catch (const Error& error) {
    fail_store_call(error, "saying this rank is alive");
  }
}

std::vector<int> ShrinkAgreement::read_list(const std::string& key) {
  Bytes value;
  try {
    // The store has no get that returns at once when the key is missing; compare_set with
    // empty expected and desired values does (it creates the key empty, which reads as no
    // list yet, and compare_set's writers treat as missing).
    value = group_.world().deadline_store().compare_set(key, {}, {}, store_deadline_);
  } catch (const Error& error) {
    fail_store_call(error, "reading the store");
  }
  return decode_rank_list(value, key);
}

void ShrinkAgreement::probe_the_silent(const std::vector<int>& alive) {
  for (int rank = 0; rank < group_.size(); ++rank) {
    if (rank == group_.rank() || probed_[rank] || contains(alive, rank)) continue;
    probed_[rank] = true;
    group_.world().probe_peer(group_.world_rank_of(rank));
  }
}

std::vector<int> ShrinkAgreement::decide(const std::vector<int>& alive,
                                         bool members_deadline_passed) const {
  std::vector<int> members;
  for (int rank = 0; rank < group_.size(); ++rank) {
    if (rank == group_.rank()) {
      members.push_back(rank);
    } else if (group_.world().peer_failed(group_.world_rank_of(rank))) {
      continue;
    } else if (contains(alive, rank)) {
      members.push_back(rank);
    } else if (!members_deadline_passed) {
      return {};  // still waiting for this member's word
    }
  }
  return members;
}

std::vector<int> ShrinkAgreement::publish(const std::vector<int>& members) {
  Bytes published;
  try {
    published = group_.world().deadline_store().compare_set(
        members_key_, {}, encode_rank_list(members), store_deadline_);
  } catch (const Error& error) {
    fail_store_call(error, "publishing the members");
  }
  return decode_rank_list(published, members_key_);
}

void ShrinkAgreement::fail_store_call(const Error& cause, const char* what) const {
  auto root = std::make_shared<const Error>(cause);
  throw Error(cause.code(),
              "shrink #" + std::to_string(epoch_) + " of group '" + group_.name() +
                  "' could not agree on the survivors through the job's store (" + what +
                  ", within the timeout of " + std::to_string(timeout_.count()) +
                  " ms and its grace): " + cause.message(),
              group_.context_for(core::OpInfo{"shrink"}), root);
}

}  // namespace weft::api
