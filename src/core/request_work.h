// RequestWork — the Work of one point-to-point operation: a transport Request plus what is
// needed to wait on it with a deadline and a clear error. It also records the op's end in the
// group's recorder (whose start the caller recorded when it posted the op) when a wait or a
// poll first sees it finish.
#pragma once

#include <atomic>
#include <memory>

#include "core/communicator.h"
#include "util/mutex.h"
#include "weft/work.h"

namespace weft::core {

class RequestWork final : public Work {
 public:
  RequestWork(std::shared_ptr<Communicator> communicator, transport::RequestPtr request,
              OpInfo info, OpRecorder::Token recorded = {});

  void wait(std::optional<std::chrono::milliseconds> timeout) override;
  bool is_completed() const override;
  bool is_success() const override { return request_->done() && !request_->failed(); }
  std::exception_ptr exception() const override;
  int source_rank() const override;

 private:
  std::shared_ptr<Communicator> communicator_;
  transport::RequestPtr request_;
  OpInfo info_;
  std::chrono::steady_clock::time_point deadline_;
  mutable util::Mutex mutex_;
  std::exception_ptr error_ WEFT_GUARDED_BY(mutex_);  // set by the first wait that failed
  OpRecorder::Token recorded_;
  bool recording_;                          // whether the recorder keeps this op at all
  mutable std::atomic<bool> ended_{false};  // its end recorded

  void record_end(OpOutcome outcome) const;
  void wait_for_request(std::optional<std::chrono::milliseconds> timeout);
};

}  // namespace weft::core
