#include "node_rendezvous.h"

#include <stdexcept>
#include <thread>
#include <vector>

#include "rank_environment.h"
#include "weft/error.h"

namespace weft::run {
namespace {

const std::string kFailedKey = "weftrun/failed";
const std::string kDoneKey = "weftrun/done";
constexpr std::chrono::milliseconds kPollInterval{200};
constexpr std::chrono::milliseconds kPollAnswerWithin{500};

std::string node_key(int node, const char* what) {
  return "weftrun/node/" + std::to_string(node) + "/" + what;
}

}  // namespace

NodeRendezvous::NodeRendezvous(const std::string& host, int port, int nnodes, int node_rank,
                               std::chrono::milliseconds join_timeout, const std::string& job_token)
    : store_(std::make_unique<TcpStore>(host, port, join_timeout, job_token)),
      nnodes_(nnodes),
      node_rank_(node_rank),
      join_timeout_(join_timeout),
      address_(join_host_port(host, port)) {
  store_->set_timeout(join_timeout);
}

void NodeRendezvous::join(int nproc_per_node) {
  if (store_->add(node_key(node_rank_, "joins"), 1) != 1) {
    throw std::runtime_error("another weftrun already joined this job as node " +
                             std::to_string(node_rank_));
  }
  store_->set(node_key(node_rank_, "nproc"), to_bytes(std::to_string(nproc_per_node)));

  std::vector<std::string> keys;
  for (int node = 0; node < nnodes_; ++node) keys.push_back(node_key(node, "nproc"));
  try {
    store_->wait(keys, join_timeout_);
  } catch (const Error& error) {
    if (error.code() == ErrorCode::kPeerFailure) throw;
    std::string missing;
    for (int node = 0; node < nnodes_; ++node) {
      if (!store_->check({keys[static_cast<std::size_t>(node)]})) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(node);
      }
    }
    throw std::runtime_error("node(s) " + missing + " did not join within " +
                             std::to_string(join_timeout_.count() / 1000) + " s");
  }
  std::vector<Bytes> nprocs = store_->multi_get(keys);
  for (int node = 0; node < nnodes_; ++node) {
    std::string theirs = to_string(nprocs[static_cast<std::size_t>(node)]);
    if (theirs != std::to_string(nproc_per_node)) {
      throw std::runtime_error("node " + std::to_string(node) + " runs " + theirs +
                               " ranks per node, this node " + std::to_string(nproc_per_node) +
                               "; every node must give the same --nproc-per-node");
    }
  }
}

void NodeRendezvous::publish_failure(const JobFailure& failure) {
  store_->compare_set(kFailedKey, {},
                      to_bytes(std::to_string(failure.exit_code) + "\n" + failure.line));
}

std::optional<JobFailure> NodeRendezvous::poll_failure() {
  std::string text;
  // Briefly: the supervisor relays its ranks' output between polls. A store that does not
  // answer in time, or cannot be reached (a link down), is lost only when that lasts the join
  // timeout; one that closed the connection is lost at once.
  store_->set_timeout(kPollAnswerWithin);
  try {
    bool failed = store_->check({kFailedKey});
    if (failed) text = to_string(store_->get(kFailedKey));
    store_->set_timeout(join_timeout_);
    silent_since_.reset();
    if (!failed) return std::nullopt;
  } catch (const Error& error) {
    store_->set_timeout(join_timeout_);
    if (error.code() == ErrorCode::kPeerFailure) throw;
    const auto now = std::chrono::steady_clock::now();
    if (!silent_since_) silent_since_ = now;
    if (now - *silent_since_ < join_timeout_) return std::nullopt;
    throw;
  }
  JobFailure failure;
  std::size_t newline = text.find('\n');
  try {
    failure.exit_code = std::stoi(text.substr(0, newline));
  } catch (const std::exception&) {
    failure.exit_code = 1;
  }
  if (failure.exit_code == 0) failure.exit_code = 1;
  failure.line = newline == std::string::npos ? text : text.substr(newline + 1);
  return failure;
}

void NodeRendezvous::report_done() { store_->add(kDoneKey, 1); }

std::optional<JobFailure> NodeRendezvous::wait_until_all_done(
    const std::function<bool()>& give_up, std::optional<std::chrono::milliseconds> linger) {
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (store_->add(kDoneKey, 0) >= nnodes_) break;
    if (give_up()) break;
    if (linger && std::chrono::steady_clock::now() - start >= *linger) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  return poll_failure();
}

}  // namespace weft::run
