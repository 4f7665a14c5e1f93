#include "transport/tcp/candidate_dial.h"

#include <algorithm>

#include "weft/error.h"

namespace weft::transport {

CandidateDial::CandidateDial(std::vector<util::SocketAddress> candidates,
                             std::chrono::milliseconds window, Clock::time_point now)
    : candidates_(std::move(candidates)), window_end_(now + window) {
  if (candidates_.empty()) {
    throw Error(ErrorCode::kInternal, "a connection attempt with no address to try");
  }
  start_current(now);
}

void CandidateDial::start_current(Clock::time_point now) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(window_end_ - now);
  const bool last = index_ + 1 == candidates_.size();
  connect_budget_ = std::max(last ? left : std::min(left, kConnectBudget), kConnectFloor);
  connect_deadline_ = now + connect_budget_;
}

bool CandidateDial::advance(const std::string& outcome, Clock::time_point now) {
  if (index_ + 1 >= candidates_.size()) {
    if (failures_.size() == index_) failures_.push_back(current().to_string() + ": " + outcome);
    return false;
  }
  failures_.push_back(current().to_string() + ": " + outcome);
  ++index_;
  start_current(now);
  return true;
}

std::string CandidateDial::failures() const {
  std::string text;
  for (const std::string& failure : failures_) text += (text.empty() ? "" : ", ") + failure;
  return text;
}

std::string CandidateDial::all() const {
  std::string text;
  for (const util::SocketAddress& address : candidates_) {
    text += (text.empty() ? "" : " or ") + address.to_string();
  }
  return text;
}

}  // namespace weft::transport
