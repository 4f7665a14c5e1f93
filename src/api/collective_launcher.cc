#include "api/collective_launcher.h"

#include "api/op_log.h"
#include "core/collective_work.h"

namespace weft::api {

namespace {

constexpr std::size_t kDefaultSegmentBytes = 1u << 20;

std::chrono::milliseconds timeout_of(const core::Communicator& comm,
                                     const CollectiveLaunch& launch) {
  return launch.timeout.count() > 0 ? launch.timeout : comm.timeout();
}

core::OpStart op_start(const CollectiveLaunch& launch, int64_t seq) {
  core::OpStart what;
  what.op = launch.name;
  what.algorithm = launch.algorithm;
  what.seq = seq;
  what.bytes = launch.bytes;
  what.dtype = launch.signature.dtype;
  what.peer = launch.signature.root;
  return what;
}

// Runs the call under the claim `hold` (released when it returns or throws), numbered next.
template <typename RunBody>
void run(core::Communicator& comm, core::RunnerClaim::Hold hold, const CollectiveLaunch& launch,
         const RunBody& body) {
  core::HeldRunnerClaim held(comm.runner_claim(), hold);
  const int64_t seq = comm.next_seq();
  core::OpRecorder& recorder = comm.recorder();
  core::OpRecorder::Token recorded = recorder.begin(op_start(launch, seq));
  const bool logged = op_log_enabled();
  if (logged) [[unlikely]]
    log_op_start(comm, launch, seq);
  if (comm.troubled()) [[unlikely]] {
    try {
      core::OpInfo info{launch.name, -1, launch.bytes, seq};
      comm.check_not_aborted(info);
      comm.check_collectives_usable(info);
    } catch (const Error& error) {
      recorder.end(recorded, core::outcome_of(error.code()));
      throw;
    }
  }
  bool waited = true;
  try {
    coll::CollectiveCall call(comm, launch.name, launch.signature, seq, timeout_of(comm, launch),
                              launch.segment_bytes ? launch.segment_bytes : kDefaultSegmentBytes);
    body(call);
    call.report_slot_fills();
    waited = call.waited();
  } catch (const Error& raised) {
    // An error of a hierarchical collective's host group is told in this group's ranks too.
    const Error error = comm.with_host_group_ranks_explained(raised);
    // Recorded before the group fails: the dump that failing triggers then shows how it ended.
    recorder.end(recorded, core::outcome_of(error.code()));
    if (logged) [[unlikely]]
      log_op_end(comm, launch, seq, to_string(error.code()));
    if (error.code() != ErrorCode::kInvalidArgument) {
      comm.fail_collectives(std::make_shared<const Error>(error));
    }
    throw error;
  } catch (...) {
    recorder.end(recorded, core::OpOutcome::kFailed);
    throw;
  }
  recorder.end(recorded, core::OpOutcome::kDone, waited);
  if (logged) [[unlikely]]
    log_op_end(comm, launch, seq, "done");
}

}  // namespace

void invalid_argument(const core::Communicator& comm, const char* op, const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message, comm.context_for(core::OpInfo{op}));
}

bool run_here(core::Communicator& comm, const CollectiveLaunch& launch, bool async,
              BorrowedBody body) {
  if (async || !comm.queue().idle()) return false;
  const core::RunnerClaim::Hold hold = comm.runner_claim().try_claim();
  if (hold == core::RunnerClaim::Hold::kNone) return false;
  run(comm, hold, launch, [&](coll::CollectiveCall& call) { body.run(body.body, call); });
  return true;
}

std::shared_ptr<Work> run_queued(const std::shared_ptr<core::Communicator>& comm,
                                 CollectiveLaunch launch, CollectiveBody body, bool async) {
  // A raw pointer: the communicator joins its queue's worker before it dies, and the worker
  // must never hold the last reference (it would join itself).
  core::Communicator* raw = comm.get();
  std::weak_ptr<core::Communicator> weak = comm;
  auto work = std::make_shared<core::CollectiveWork>(timeout_of(*comm, launch),
                                                     [weak](std::shared_ptr<const Error> error) {
                                                       if (auto alive = weak.lock())
                                                         alive->fail_collectives(std::move(error));
                                                     });
  comm->runner_claim().before_queueing();
  comm->queue().submit([raw, launch, body = std::move(body), work] {
    try {
      raw->runner_claim().claim();
      run(*raw, core::RunnerClaim::Hold::kExchanged, launch, body);
      work->finish(nullptr);
    } catch (...) {
      work->finish(std::current_exception());
    }
  });
  if (!async) {
    work->wait(std::nullopt);
    return nullptr;
  }
  return work;
}

}  // namespace weft::api
