// RequestWork — the Work of one point-to-point operation: a transport Request plus what is
// needed to wait on it with a deadline and a clear error.
#pragma once

#include <memory>
#include <mutex>

#include "core/communicator.h"
#include "weft/work.h"

namespace weft::core {

class RequestWork final : public Work {
 public:
  RequestWork(std::shared_ptr<Communicator> communicator, transport::RequestPtr request,
              OpInfo info);

  void wait(std::optional<std::chrono::milliseconds> timeout) override;
  bool is_completed() const override { return request_->done(); }
  bool is_success() const override { return request_->done() && !request_->failed(); }
  std::exception_ptr exception() const override;
  int source_rank() const override;

 private:
  std::shared_ptr<Communicator> communicator_;
  transport::RequestPtr request_;
  OpInfo info_;
  std::chrono::steady_clock::time_point deadline_;
  mutable std::mutex mutex_;
  std::exception_ptr error_;  // set by the first wait that failed
};

}  // namespace weft::core
