#include "core/request_work.h"

#include "util/deadline.h"

namespace weft::core {

RequestWork::RequestWork(std::shared_ptr<Communicator> communicator, transport::RequestPtr request,
                         OpInfo info, OpRecorder::Token recorded)
    : communicator_(std::move(communicator)),
      request_(std::move(request)),
      info_(info),
      deadline_(communicator_->deadline_from_now()),
      recorded_(recorded),
      recording_(recorded.index != 0 || communicator_->recorder().trace() != nullptr) {}

void RequestWork::wait(std::optional<std::chrono::milliseconds> timeout) {
  try {
    wait_for_request(timeout);
  } catch (const Error& error) {
    record_end(outcome_of(error.code()));
    throw;
  }
  record_end(OpOutcome::kDone);
}

bool RequestWork::is_completed() const {
  bool done = request_->done();
  if (done) record_end(request_->failed() ? OpOutcome::kFailed : OpOutcome::kDone);
  return done;
}

void RequestWork::record_end(OpOutcome outcome) const {
  if (recording_ && !ended_.exchange(true)) communicator_->recorder().end(recorded_, outcome);
}

void RequestWork::wait_for_request(std::optional<std::chrono::milliseconds> timeout) {
  {
    util::MutexLock lock(mutex_);
    if (error_) std::rethrow_exception(error_);
  }
  auto deadline = deadline_;
  OpInfo info = info_;
  if (timeout) {
    // The wait's own timeout, when it ends first, is the one the error quotes.
    auto own = util::deadline_after(*timeout);
    if (own < deadline) {
      deadline = own;
      info.timeout = *timeout;
    }
  }
  try {
    communicator_->wait(*request_, info, deadline);
  } catch (...) {
    util::MutexLock lock(mutex_);
    error_ = std::current_exception();
    throw;
  }
}

std::exception_ptr RequestWork::exception() const {
  {
    util::MutexLock lock(mutex_);
    if (error_) return error_;
  }
  if (!request_->failed()) return nullptr;
  try {
    communicator_->wait(*request_, info_, deadline_);
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

int RequestWork::source_rank() const {
  if (!is_success() || request_->kind != transport::Request::Kind::kRecv) return -1;
  return communicator_->group_rank_of(request_->source);
}

}  // namespace weft::core
