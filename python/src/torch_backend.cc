// weft._weft_torch — weft as a torch.distributed backend (torch 1.13: a c10d::ProcessGroup).
//
// python/weft/torch.py registers the backend "weft" and calls create() from torch's creator.
// Why C++ and not a Python ProcessGroup subclass: torch 1.13's PyProcessGroup trampoline
// forwards only allgather, allreduce, barrier, broadcast, reduce_scatter, send and recv to
// Python, so reduce, gather, scatter, alltoall, _allgather_base, recvAnysource... could not
// reach a Python backend from C++ callers (DDP's reducer, the dispatcher ops); and a future
// completed from Python would need a Python thread holding the GIL to watch every operation.
//
// The rendezvous runs over torch's own store (the prefix store torch hands the creator):
// TorchStore adapts a c10d::Store to weft::Store in C++, so weft's bootstrap never takes the
// GIL (a Store written in Python still works: torch's trampoline takes the GIL itself).
//
// Every operation starts weft's asynchronous form (i*) and returns a WeftWork at once:
// wait() waits for weft's Works, getFuture() returns a c10::ivalue::Future (List[Tensor],
// the outputs) that a waiter thread completes as soon as weft finishes, so that DDP's
// bucketed all_reduce overlaps with the backward pass. Tensors that weft cannot use as they
// are (non-contiguous, complex, or of a dtype weft does not have) go through a contiguous
// copy or a byte/real view; copies are written back before the Work completes.
//
// Memory safety: an operation keeps the storages it reads and writes in place until it is seen
// to be over (StoragePin: held, and pinned against reallocation, so growing or freeing a tensor
// mid-operation fails with torch's "not resizable" error); a Work dropped before its operation
// finished leaves its buffers to a keeper until weft is done with them (Orphans); outputs in
// read-only memory are refused (writable_memory.h); all_to_all split sizes are checked before
// any arithmetic on them.
//
// torch.profiler sees every operation as gloo's are seen, under gloo's names with "weft:"
// for "gloo:" (weft:all_reduce, weft:broadcast, weft:send, weft:recvAnySource, ...): the
// WeftWork is built before weft starts the operation, with that title, so c10d::Work opens a
// RecordFunction that finish() ends when weft has finished (docs/torch-backend.md).
#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <pthread.h>
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

#include "weft/error.h"
#include "weft/init.h"
#include "weft/process_group.h"
#include "weft/store.h"
#include "weft/version.h"
#include "writable_memory.h"

namespace py = pybind11;

namespace weft::torch_backend {

namespace {

constexpr const char* kBackendName = "weft";

// --- the store -------------------------------------------------------------------------

// weft::Store over torch's c10d::Store. Blocking calls use this adapter's timeout (weft sets
// it to the group's), never the torch store's own, which is left untouched.
class TorchStore final : public weft::Store {
 public:
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, const Bytes& value) override { store_->set(key, value); }
  Bytes get(const std::string& key) override {
    wait({key}, timeout());
    return store_->get(key);
  }
  int64_t add(const std::string& key, int64_t delta) override { return store_->add(key, delta); }
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    return store_->compareSet(key, expected, desired);
  }
  bool delete_key(const std::string& key) override { return store_->deleteKey(key); }
  bool check(const std::vector<std::string>& keys) override { return store_->check(keys); }
  int64_t num_keys() override { return store_->getNumKeys(); }
  void wait(const std::vector<std::string>& keys, Duration timeout) override {
    try {
      store_->wait(keys, timeout);
    } catch (const std::exception& e) {
      // torch reports a timeout as c10::Error / DistStoreError; weft's bootstrap expects kTimeout
      // (it then names the ranks that never arrived).
      throw weft::Error(weft::ErrorCode::kTimeout,
                        std::string("torch store wait failed: ") + e.what());
    }
  }
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys) override {
    wait(keys, timeout());
    std::vector<Bytes> values;
    values.reserve(keys.size());
    for (const auto& key : keys) values.push_back(store_->get(key));
    return values;
  }
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override {
    for (std::size_t i = 0; i < keys.size(); ++i) store_->set(keys[i], values[i]);
  }
  using weft::Store::wait;

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

// --- tensors as weft buffers ---------------------------------------------------------------

std::optional<weft::DType> dtype_of(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return weft::DType::kFloat32;
    case at::kDouble:
      return weft::DType::kFloat64;
    case at::kHalf:
      return weft::DType::kFloat16;
    case at::kBFloat16:
      return weft::DType::kBFloat16;
    case at::kChar:
      return weft::DType::kInt8;
    case at::kByte:
      return weft::DType::kUInt8;
    case at::kShort:
      return weft::DType::kInt16;
    case at::kInt:
      return weft::DType::kInt32;
    case at::kLong:
      return weft::DType::kInt64;
    case at::kBool:
      return weft::DType::kBool;
    default:
      return std::nullopt;
  }
}

weft::ReduceOp reduce_op_of(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return weft::ReduceOp::kSum;
    case c10d::ReduceOp::AVG:
      return weft::ReduceOp::kAvg;
    case c10d::ReduceOp::PRODUCT:
      return weft::ReduceOp::kProduct;
    case c10d::ReduceOp::MIN:
      return weft::ReduceOp::kMin;
    case c10d::ReduceOp::MAX:
      return weft::ReduceOp::kMax;
    case c10d::ReduceOp::BAND:
      return weft::ReduceOp::kBand;
    case c10d::ReduceOp::BOR:
      return weft::ReduceOp::kBor;
    case c10d::ReduceOp::BXOR:
      return weft::ReduceOp::kBxor;
    case c10d::ReduceOp::PREMUL_SUM: {
      auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(supplement != nullptr && supplement->tensor_factors.empty(),
                  "weft: PREMUL_SUM takes a scalar factor");
      return weft::ReduceOp::premul_sum(supplement->double_factor);
    }
    default:
      break;
  }
  TORCH_CHECK(false, "weft: unknown ReduceOp ", static_cast<int>(op.op_));
}

bool is_reducing_sum(const c10d::ReduceOp& op) {
  return op.op_ == c10d::ReduceOp::SUM || op.op_ == c10d::ReduceOp::AVG ||
         op.op_ == c10d::ReduceOp::PREMUL_SUM;
}

// A mutex that a forked child can use although the fork happened while it was held (the child
// has none of the parent's other threads).
std::mutex& fork_safe_mutex(std::mutex& mutex) {
  static std::vector<std::mutex*>* all = [] {
    auto* list = new std::vector<std::mutex*>();  // never destroyed (exit with work pending)
    pthread_atfork(nullptr, nullptr, [] {
      for (std::mutex* m : *all) new (m) std::mutex();
    });
    return list;
  }();
  static std::mutex registering;
  std::lock_guard<std::mutex> lock(registering);
  all->push_back(&mutex);
  return mutex;
}

// Keeps a tensor's memory where it is while weft uses it. torch grows a tensor or a storage by
// reallocating inside its StorageImpl, freeing the old memory however many references the
// storage has, so holding the tensor or even the storage does not survive t.resize_(larger) or
// storage.resize_(0). A StoragePin holds the storage (t.set_(...) or dropping t cannot free it)
// and, until release(), makes a resizable storage non-resizable, so that such a resize fails
// with torch's "Trying to resize storage that is not resizable". Pins of one storage nest
// (counted under a mutex); the last release restores the flag. weft._storage pins
// weft.distributed's tensors on torch 1.x with these too (_pin_storage).
class StoragePin {
 public:
  explicit StoragePin(c10::Storage storage) : storage_(std::move(storage)) {
    c10::StorageImpl* impl = storage_.unsafeGetStorageImpl();
    if (impl == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex());
    auto found = counts().find(impl);
    if (found != counts().end()) {
      ++found->second;
    } else if (impl->resizable()) {
      impl->set_resizable(false);
      counts().emplace(impl, 1);
    } else {
      return;  // cannot be reallocated: holding it is enough
    }
    pinned_ = true;
  }
  ~StoragePin() { release(); }
  StoragePin(StoragePin&& other) noexcept
      : storage_(std::move(other.storage_)), pinned_(std::exchange(other.pinned_, false)) {}
  StoragePin& operator=(StoragePin&& other) noexcept {
    if (this != &other) {
      release();
      storage_ = std::move(other.storage_);
      pinned_ = std::exchange(other.pinned_, false);
    }
    return *this;
  }
  StoragePin(const StoragePin&) = delete;
  StoragePin& operator=(const StoragePin&) = delete;

  // Ends the pin; the storage stays held until this is destroyed. Idempotent.
  void release() {
    if (!pinned_) return;
    pinned_ = false;
    c10::StorageImpl* impl = storage_.unsafeGetStorageImpl();
    std::lock_guard<std::mutex> lock(mutex());
    auto found = counts().find(impl);
    if (found != counts().end() && --found->second == 0) {
      counts().erase(found);
      impl->set_resizable(true);
    }
  }

 private:
  static std::mutex& mutex() {
    static std::mutex& m = fork_safe_mutex(*new std::mutex());
    return m;
  }
  static std::unordered_map<c10::StorageImpl*, int>& counts() {
    static auto* map = new std::unordered_map<c10::StorageImpl*, int>();
    return *map;
  }

  c10::Storage storage_;
  bool pinned_ = false;
};

// Buffers and bookkeeping of one operation: tensors kept alive and their storages pinned,
// copies to write back. op: the operation's name, for errors.
struct Staging {
  explicit Staging(const char* op = "") : op(op) {}

  const char* op;
  std::vector<at::Tensor> keep;
  std::vector<std::pair<at::Tensor, at::Tensor>> copy_back;  // (user tensor, staged copy)
  std::vector<StoragePin> pins;                              // of the memory weft reads or writes

  // The dense tensor weft works on for a tensor it reads.
  at::Tensor readable(const at::Tensor& t) {
    check_tensor(t);
    at::Tensor dense = t.is_contiguous() ? t : t.contiguous();
    keep.push_back(dense);
    pin(dense);
    return dense;
  }
  // ... for a tensor it writes (after the operation the user's tensor holds the result).
  at::Tensor writable(const at::Tensor& t) {
    check_tensor(t);
    check_writable_memory(t);
    if (t.is_contiguous()) {
      keep.push_back(t);
      pin(t);
      return t;
    }
    at::Tensor dense = t.contiguous();  // this operation's own: nobody else resizes it
    keep.push_back(dense);
    copy_back.emplace_back(t, dense);
    return dense;
  }
  void pin(const at::Tensor& t) {
    if (t.has_storage()) pins.emplace_back(t.storage());
  }
  static void check_tensor(const at::Tensor& t) {
    TORCH_CHECK(t.defined(), "weft: undefined tensor");
    TORCH_CHECK(t.device().is_cpu(), "weft: tensors must be on the CPU (got ", t.device(), ")");
    TORCH_CHECK(t.layout() == at::kStrided, "weft: only dense (strided) tensors are supported");
  }
  // An output over a read-only mapping (torch.from_numpy of np.memmap(mode="r")) would kill the
  // process with SIGSEGV when written: refused. Probes the bytes its elements span.
  void check_writable_memory(const at::Tensor& t) const {
    if (t.numel() == 0) return;
    int64_t low = 0, high = 0;
    for (int64_t d = 0; d < t.dim(); ++d) {
      int64_t reach = (t.size(d) - 1) * t.stride(d);
      (reach < 0 ? low : high) += reach;
    }
    const auto* first = static_cast<const char*>(t.data_ptr()) + low * t.element_size();
    const auto bytes = static_cast<std::size_t>((high - low + 1) * t.element_size());
    TORCH_CHECK_VALUE(
        weft::python::probe_writable(first, bytes) != weft::python::MemoryAccess::kNotWritable,
        "weft: ", op, ": an output tensor (shape ", t.sizes(), ", ", bytes, " bytes at ",
        static_cast<const void*>(first),
        ") lies in read-only memory (a read-only mapping, such as "
        "torch.from_numpy(np.memmap(path, mode=\"r\"))), but weft writes the "
        "result into it: pass a writable copy (t.clone())");
  }
};

// How weft sees a dense tensor. Reductions need weft's dtype (complex as pairs of reals, for
// sums only); data movement views any other dtype as bytes.
BufferView view_for_reduce(const at::Tensor& dense, const c10d::ReduceOp& op, const char* what) {
  at::Tensor t = dense;
  if (t.is_complex()) {
    TORCH_CHECK(is_reducing_sum(op), "weft: ", what,
                " on complex tensors supports SUM, AVG and PREMUL_SUM only");
    t = at::view_as_real(t);
  }
  auto dtype = dtype_of(t.scalar_type());
  TORCH_CHECK(dtype.has_value(), "weft: ", what, " does not support dtype ", t.scalar_type());
  return BufferView(t.data_ptr(), static_cast<std::size_t>(t.numel()), *dtype);
}

BufferView view_for_move(const at::Tensor& t) {
  auto dtype = dtype_of(t.scalar_type());
  if (dtype) return BufferView(t.data_ptr(), static_cast<std::size_t>(t.numel()), *dtype);
  return BufferView(t.data_ptr(), t.nbytes(), weft::DType::kUInt8);
}

// Elements of weft's view per row of dim 0 (for all_to_all's split sizes).
std::size_t units_per_row(const at::Tensor& t, const BufferView& view) {
  if (t.dim() == 0) return view.count();  // one row
  if (t.size(0) == 0) return 0;
  return view.count() / static_cast<std::size_t>(t.size(0));
}

// --- Work and futures ------------------------------------------------------------------

using Works = std::vector<std::shared_ptr<weft::Work>>;

// What torch.profiler calls an operation: gloo's names (ProcessGroupGloo.cpp) with "weft:".
// Like gloo, the coalesced and single-tensor forms take their operation's name.
const char* profiling_title(c10d::OpType type) {
  switch (type) {
    case c10d::OpType::BROADCAST:
      return "weft:broadcast";
    case c10d::OpType::ALLREDUCE:
    case c10d::OpType::ALLREDUCE_COALESCED:
      return "weft:all_reduce";
    case c10d::OpType::REDUCE:
      return "weft:reduce";
    case c10d::OpType::ALLGATHER:
    case c10d::OpType::_ALLGATHER_BASE:
    case c10d::OpType::ALLGATHER_COALESCED:
      return "weft:all_gather";
    case c10d::OpType::GATHER:
      return "weft:gather";
    case c10d::OpType::SCATTER:
      return "weft:scatter";
    case c10d::OpType::REDUCE_SCATTER:
    case c10d::OpType::_REDUCE_SCATTER_BASE:
      return "weft:reduce_scatter";  // gloo has none of its own (torch 2.x's is an all_reduce)
    case c10d::OpType::ALLTOALL_BASE:
    case c10d::OpType::ALLTOALL:
      return "weft:all_to_all";
    case c10d::OpType::BARRIER:
      return "weft:barrier";
    case c10d::OpType::SEND:
      return "weft:send";
    case c10d::OpType::RECV:
      return "weft:recv";
    case c10d::OpType::RECVANYSOURCE:
      return "weft:recvAnySource";
    default:
      return "weft:unknown";
  }
}

class WeftWork;

// Completes the futures of pending Works as soon as weft finishes them. Collectives of a
// group finish in the order issued, so one thread waiting on the oldest first is exact for
// them; point-to-point operations (which may finish in any order) get a thread each.
class FutureCompleter {
 public:
  static FutureCompleter& instance() {
    static auto* completer = [] {
      auto* c = new FutureCompleter();  // never destroyed (exit with work pending)
      // A forked child has no waiter thread: start afresh there.
      pthread_atfork(nullptr, nullptr, [] { instance().reset_after_fork(); });
      return c;
    }();
    return *completer;
  }
  void reset_after_fork() {
    new (&mutex_) std::mutex();
    new (&cv_) std::condition_variable();
    for (auto& work : queue_) work.release();  // owned by the parent's threads: leak, never free
    queue_.clear();
    started_ = false;
  }
  void enqueue(c10::intrusive_ptr<WeftWork> work, bool in_order);

 private:
  FutureCompleter() = default;
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<WeftWork>> queue_;
  bool started_ = false;
};

// torch 1.13 waits on the Work of every call, async_op=False included. A small op is done
// within microseconds of being issued; sleeping for it costs a scheduler wake-up (tens of
// microseconds when the wake lands on an idle core). So a waiter first polls for a while, as
// weft.distributed's wait does (blocking_wait.h), yielding its core to whoever needs it.
constexpr std::chrono::microseconds kWaitSpin{50};

void spin_until_completed(const weft::Work& work) {
  auto until = std::chrono::steady_clock::now() + kWaitSpin;
  while (!work.is_completed() && std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
}

// Operations whose Work was dropped before they finished (dist.isend(...) without keeping the
// Work): their weft Works and buffers stay here until weft has finished with them, so weft never
// touches memory freed meanwhile. Swept at each new operation.
class Orphans {
 public:
  static void add(Works works, Staging staging) {
    std::lock_guard<std::mutex> lock(mutex());
    list().push_back({std::move(works), std::move(staging)});
  }
  static void sweep() {
    std::vector<Orphan> done;  // destroyed outside the lock
    {
      std::lock_guard<std::mutex> lock(mutex());
      auto& all = list();
      if (all.empty()) return;
      for (auto it = all.begin(); it != all.end();) {
        bool completed = true;
        for (const auto& w : it->works) completed = completed && w->is_completed();
        if (completed) {
          done.push_back(std::move(*it));
          it = all.erase(it);
        } else {
          ++it;
        }
      }
    }
  }

 private:
  struct Orphan {
    Works works;
    Staging staging;
  };
  static std::mutex& mutex() {
    static std::mutex& m = fork_safe_mutex(*new std::mutex());
    return m;
  }
  static std::vector<Orphan>& list() {
    static auto* orphans = new std::vector<Orphan>();  // never destroyed (exit with work pending)
    return *orphans;
  }
};

class WeftWork : public c10d::Work {
 public:
  // profiling_title: the name torch.profiler shows (c10d::Work records the operation from
  // here to finish() when a profiler is on); inputs: the tensors whose shapes it records.
  WeftWork(int rank, c10d::OpType type, const char* profiling_title,
           const c10::optional<std::vector<at::Tensor>>& inputs,
           std::shared_ptr<weft::ProcessGroup> group, std::vector<at::Tensor> outputs,
           Staging staging, std::function<void()> after = nullptr)
      : c10d::Work(rank, type, profiling_title, inputs),
        group_(std::move(group)),
        outputs_(std::move(outputs)),
        staging_(std::move(staging)),
        after_(std::move(after)) {}

  ~WeftWork() override {
    std::lock_guard<std::mutex> lock(state_mutex_);
    if (finished_) return;
    for (const auto& w : works_) {
      if (!w->is_completed()) {
        Orphans::add(std::move(works_), std::move(staging_));
        return;
      }
    }
  }

  // The operation's weft Works, once started (before anyone else sees this Work).
  void start(std::vector<std::shared_ptr<weft::Work>> works) { works_ = std::move(works); }

  bool isCompleted() override {
    for (const auto& w : works_) {
      if (!w->is_completed()) return false;
    }
    complete_from_weft();
    return true;
  }

  bool isSuccess() const override {
    std::lock_guard<std::mutex> lock(state_mutex_);
    return finished_ && !error_;
  }

  std::exception_ptr exception() const override {
    std::lock_guard<std::mutex> lock(state_mutex_);
    return error_;
  }

  int sourceRank() const override {
    TORCH_CHECK(!works_.empty(), "weft: sourceRank of an operation without peers");
    return works_.front()->source_rank();
  }

  std::vector<at::Tensor> result() override { return outputs_; }

  void synchronize() override {}

  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override {
    wait_weft(timeout.count() > 0 ? std::optional(timeout) : std::nullopt);
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      error = error_;
    }
    if (error) std::rethrow_exception(error);
    return true;
  }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    bool pending = false;
    c10::intrusive_ptr<c10::ivalue::Future> future;
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      if (!future_) {
        future_ =
            c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
        if (finished_) {
          mark_future_locked();
        } else {
          pending = true;
        }
      }
      future = future_;
    }
    if (pending) {
      bool in_order = opType_ != c10d::OpType::SEND && opType_ != c10d::OpType::RECV &&
                      opType_ != c10d::OpType::RECVANYSOURCE;
      FutureCompleter::instance().enqueue(c10::intrusive_ptr<WeftWork>::reclaim_copy(this),
                                          in_order);
    }
    return future;
  }

  // Waits for weft (no GIL here: torch releases it before calling wait) and completes.
  void wait_weft(std::optional<std::chrono::milliseconds> timeout) {
    std::exception_ptr error;
    auto deadline =
        std::chrono::steady_clock::now() + timeout.value_or(std::chrono::milliseconds(0));
    for (const auto& w : works_) {
      try {
        if (timeout) {
          auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
              deadline - std::chrono::steady_clock::now());
          w->wait(std::max(left, std::chrono::milliseconds(1)));
        } else {
          spin_until_completed(*w);
          w->wait(std::nullopt);
        }
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    finish(error);
  }

 private:
  void complete_from_weft() {
    std::exception_ptr error;
    for (const auto& w : works_) {
      if (!error) error = w->exception();
    }
    finish(error);
  }

  void finish(std::exception_ptr error) {
    c10::intrusive_ptr<c10::ivalue::Future> future;
    std::function<void()> end_record;
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      if (finished_) return;
      end_record = std::move(recordFunctionEndCallback_);  // set by c10d::Work when profiling
      recordFunctionEndCallback_ = nullptr;
      if (!error) {
        try {
          for (auto& [user, staged] : staging_.copy_back) user.copy_(staged);
          if (after_) after_();
        } catch (...) {
          error = std::current_exception();
        }
      }
      staging_ = Staging();
      error_ = error;
      finished_ = true;
      future = future_;
    }
    // The profiler's event ends when the outputs are ready, before anyone waiting sees them.
    if (end_record) end_record();
    // Outside the lock: the future's callbacks (DDP's bucket hooks) run here.
    if (future) mark_future(future);
  }

  void mark_future_locked() {
    if (error_) {
      future_->setError(error_);
    } else {
      future_->markCompleted(c10::IValue(outputs_));
    }
  }

  void mark_future(const c10::intrusive_ptr<c10::ivalue::Future>& future) {
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      error = error_;
    }
    if (error) {
      future->setErrorIfNeeded(error);
    } else if (!future->completed()) {
      future->markCompleted(c10::IValue(outputs_));
    }
  }

  std::shared_ptr<weft::ProcessGroup> group_;
  std::vector<std::shared_ptr<weft::Work>> works_;
  std::vector<at::Tensor> outputs_;
  Staging staging_;
  std::function<void()> after_;

  mutable std::mutex state_mutex_;
  bool finished_ = false;
  std::exception_ptr error_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

void FutureCompleter::enqueue(c10::intrusive_ptr<WeftWork> work, bool in_order) {
  if (!in_order) {
    std::thread([work = std::move(work)] { work->wait_weft(std::nullopt); }).detach();
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(work));
  if (!started_) {
    started_ = true;
    std::thread([this] { run(); }).detach();
  }
  cv_.notify_one();
}

void FutureCompleter::run() {
  for (;;) {
    c10::intrusive_ptr<WeftWork> work;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return !queue_.empty(); });
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work->wait_weft(std::nullopt);
  }
}

// --- the process group -----------------------------------------------------------------

class ProcessGroupWeft final : public c10d::ProcessGroup {
 public:
  ProcessGroupWeft(std::shared_ptr<weft::ProcessGroup> group, int rank, int size)
      : c10d::ProcessGroup(rank, size), group_(std::move(group)) {}

  const std::string getBackendName() const override { return kBackendName; }

  std::shared_ptr<weft::ProcessGroup> weft_group() const { return group_; }

  // Sequence numbers: every member counts the collectives it issues alike.
  void setSequenceNumberForGroup() override { seq_ = 0; }
  uint64_t getSequenceNumberForGroup() override { return seq_.load(); }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    const at::Tensor& tensor = single(tensors, "broadcast");
    check_root(opts.rootRank, "broadcast");
    Staging staging("broadcast");
    at::Tensor dense = staging.writable(tensor);
    auto view = view_for_move(dense);
    return make(
        c10d::OpType::BROADCAST, tensors,
        [&] { return Works{group_->ibroadcast(view, int(opts.rootRank))}; }, tensors,
        std::move(staging));
  }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    const at::Tensor& tensor = single(tensors, "allreduce");
    Staging staging("all_reduce");
    at::Tensor dense = staging.writable(tensor);
    auto view = view_for_reduce(dense, opts.reduceOp, "allreduce");
    return make(
        c10d::OpType::ALLREDUCE, tensors,
        [&] { return Works{group_->iall_reduce(view, reduce_op_of(opts.reduceOp))}; }, tensors,
        std::move(staging));
  }

  // One all_reduce over the tensors packed into one buffer (they share a dtype, as gloo asks).
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    TORCH_CHECK(!tensors.empty(), "weft: allreduce_coalesced needs at least one tensor");
    for (const auto& t : tensors) {
      Staging::check_tensor(t);
      TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(),
                  "weft: allreduce_coalesced tensors must all have the same dtype");
    }
    Staging staging("all_reduce_coalesced");
    for (const auto& t : tensors) staging.check_writable_memory(t);  // copied back into
    std::vector<at::Tensor> flat_parts;
    for (const auto& t : tensors) flat_parts.push_back(t.reshape({-1}));
    at::Tensor flat = at::cat(flat_parts);
    staging.keep.push_back(flat);
    auto view = view_for_reduce(flat, opts.reduceOp, "allreduce_coalesced");
    std::vector<at::Tensor> outs = tensors;
    auto after = [flat, outs]() mutable {
      int64_t offset = 0;
      for (auto& t : outs) {
        t.copy_(flat.narrow(0, offset, t.numel()).view_as(t));
        offset += t.numel();
      }
    };
    return make(
        c10d::OpType::ALLREDUCE_COALESCED, tensors,
        [&] { return Works{group_->iall_reduce(view, reduce_op_of(opts.reduceOp))}; }, tensors,
        std::move(staging), after);
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override {
    const at::Tensor& tensor = single(tensors, "reduce");
    check_root(opts.rootRank, "reduce");
    Staging staging("reduce");
    at::Tensor dense = staging.writable(tensor);
    auto view = view_for_reduce(dense, opts.reduceOp, "reduce");
    return make(
        c10d::OpType::REDUCE, tensors,
        [&] {
          return Works{group_->ireduce(view, int(opts.rootRank), reduce_op_of(opts.reduceOp))};
        },
        tensors, std::move(staging));
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions&) override {
    const at::Tensor& input = single(inputs, "allgather");
    TORCH_CHECK(outputs.size() == 1, "weft: allgather takes one output list");
    check_list_size(outputs[0], "allgather output list");
    Staging staging("all_gather");
    auto in = view_for_move(staging.readable(input));
    std::vector<BufferView> outs;
    for (const auto& out : outputs[0]) {
      check_same_type(out, input, "allgather");
      outs.push_back(view_for_move(staging.writable(out)));
    }
    return make(
        c10d::OpType::ALLGATHER, inputs, [&] { return Works{group_->iall_gather(in, outs)}; },
        outputs[0], std::move(staging));
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions&) override {
    check_same_type(output, input, "_allgather_base");
    TORCH_CHECK(output.numel() == input.numel() * size_,
                "weft: _allgather_base output must hold world size x input elements");
    Staging staging("all_gather_into_tensor");
    auto in = view_for_move(staging.readable(input));
    auto out = view_for_move(staging.writable(output));
    return make(
        c10d::OpType::_ALLGATHER_BASE, {input}, [&] { return Works{group_->iall_gather(in, out)}; },
        {output}, std::move(staging));
  }

  // Every input packed as bytes into one buffer, gathered at once, unpacked per rank.
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions&) override {
    TORCH_CHECK(output_lists.size() == static_cast<std::size_t>(size_),
                "weft: allgather_coalesced needs one output list per rank");
    for (const auto& list : output_lists) {
      TORCH_CHECK(list.size() == inputs.size(),
                  "weft: allgather_coalesced output lists must match the inputs");
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        check_same_type(list[i], inputs[i], "allgather_coalesced");
        TORCH_CHECK(list[i].numel() == inputs[i].numel(),
                    "weft: allgather_coalesced output sizes must match the inputs");
      }
    }
    std::vector<at::Tensor> parts;
    for (const auto& t : inputs) {
      Staging::check_tensor(t);
      parts.push_back(t.contiguous().view({-1}).view(at::kByte));
    }
    at::Tensor packed = parts.empty() ? at::empty({0}, at::kByte) : at::cat(parts);
    at::Tensor gathered = at::empty({size_ * packed.numel()}, at::kByte);
    Staging staging("all_gather_coalesced");
    for (const auto& list : output_lists) {
      for (const auto& t : list) staging.check_writable_memory(t);  // copied into after
    }
    staging.keep = {packed, gathered};
    auto lists = output_lists;
    auto after = [gathered, lists, bytes = packed.numel()]() mutable {
      for (std::size_t r = 0; r < lists.size(); ++r) {
        int64_t offset = static_cast<int64_t>(r) * bytes;
        for (auto& t : lists[r]) {
          int64_t n = static_cast<int64_t>(t.nbytes());
          auto src = gathered.narrow(0, offset, n);
          t.copy_(src.view(t.scalar_type()).view(t.sizes()));
          offset += n;
        }
      }
    };
    std::vector<at::Tensor> flat_outputs;
    for (const auto& list : output_lists)
      flat_outputs.insert(flat_outputs.end(), list.begin(), list.end());
    return make(
        c10d::OpType::ALLGATHER_COALESCED, inputs,
        [&] { return Works{group_->iall_gather(view_for_move(packed), view_for_move(gathered))}; },
        flat_outputs, std::move(staging), after);
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    const at::Tensor& input = single(inputs, "gather");
    check_root(opts.rootRank, "gather");
    Staging staging("gather");
    auto in = view_for_move(staging.readable(input));
    std::vector<BufferView> outs;
    std::vector<at::Tensor> result;
    if (rank_ == opts.rootRank) {
      TORCH_CHECK(outputs.size() == 1, "weft: gather takes one output list on the root");
      check_list_size(outputs[0], "gather output list");
      for (const auto& out : outputs[0]) {
        check_same_type(out, input, "gather");
        outs.push_back(view_for_move(staging.writable(out)));
      }
      result = outputs[0];
    } else {
      TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                  "weft: gather takes no output list on ranks other than the root");
    }
    return make(
        c10d::OpType::GATHER, inputs,
        [&] { return Works{group_->igather(in, outs, int(opts.rootRank))}; }, result,
        std::move(staging));
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    const at::Tensor& output = single(outputs, "scatter");
    check_root(opts.rootRank, "scatter");
    Staging staging("scatter");
    auto out = view_for_move(staging.writable(output));
    std::vector<ConstBufferView> ins;
    if (rank_ == opts.rootRank) {
      TORCH_CHECK(inputs.size() == 1, "weft: scatter takes one input list on the root");
      check_list_size(inputs[0], "scatter input list");
      for (const auto& in : inputs[0]) {
        check_same_type(in, output, "scatter");
        ins.push_back(view_for_move(staging.readable(in)));
      }
    } else {
      TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                  "weft: scatter takes no input list on ranks other than the root");
    }
    return make(
        c10d::OpType::SCATTER, inputs.empty() ? std::vector<at::Tensor>() : inputs[0],
        [&] { return Works{group_->iscatter(ins, out, int(opts.rootRank))}; }, outputs,
        std::move(staging));
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    const at::Tensor& output = single(outputs, "reduce_scatter");
    TORCH_CHECK(inputs.size() == 1, "weft: reduce_scatter takes one input list");
    check_list_size(inputs[0], "reduce_scatter input list");
    Staging staging("reduce_scatter");
    auto out = view_for_reduce(staging.writable(output), opts.reduceOp, "reduce_scatter");
    std::vector<ConstBufferView> ins;
    for (const auto& in : inputs[0]) {
      check_same_type(in, output, "reduce_scatter");
      ins.push_back(view_for_reduce(staging.readable(in), opts.reduceOp, "reduce_scatter"));
    }
    return make(
        c10d::OpType::REDUCE_SCATTER, inputs[0],
        [&] { return Works{group_->ireduce_scatter(ins, out, reduce_op_of(opts.reduceOp))}; },
        outputs, std::move(staging));
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
    check_same_type(output, input, "_reduce_scatter_base");
    TORCH_CHECK(input.numel() == output.numel() * size_,
                "weft: _reduce_scatter_base input must hold world size x output elements");
    Staging staging("reduce_scatter_tensor");
    auto in = view_for_reduce(staging.readable(input), opts.reduceOp, "_reduce_scatter_base");
    auto out = view_for_reduce(staging.writable(output), opts.reduceOp, "_reduce_scatter_base");
    return make(
        c10d::OpType::_REDUCE_SCATTER_BASE, {input},
        [&] { return Works{group_->ireduce_scatter(in, out, reduce_op_of(opts.reduceOp))}; },
        {output}, std::move(staging));
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions&) override {
    check_same_type(output, input, "alltoall_base");
    Staging staging("all_to_all_single");
    auto in = view_for_move(staging.readable(input));
    auto out = view_for_move(staging.writable(output));
    auto out_units = split_units(output_splits, output, out, "output_split_sizes");
    auto in_units = split_units(input_splits, input, in, "input_split_sizes");
    // weft takes "empty" as equal blocks on each side independently; torch allows one side
    // given and the other empty (equal blocks on that side).
    if (in_units.empty() != out_units.empty()) {
      auto equal = [this](const BufferView& v) {
        TORCH_CHECK_VALUE(v.count() % size_ == 0, "weft: all_to_all_single on rank ", rank_,
                          ": a tensor given no split sizes holds ", v.count(),
                          " elements, which do not divide into ", size_, " equal blocks");
        return std::vector<std::size_t>(size_, v.count() / size_);
      };
      if (in_units.empty()) in_units = equal(in);
      if (out_units.empty()) out_units = equal(out);
    }
    return make(
        c10d::OpType::ALLTOALL_BASE, {input},
        [&] { return Works{group_->iall_to_all(in, out, in_units, out_units)}; }, {output},
        std::move(staging));
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions&) override {
    check_list_size(outputs, "alltoall output list");
    check_list_size(inputs, "alltoall input list");
    Staging staging("all_to_all");
    std::vector<ConstBufferView> ins;
    std::vector<BufferView> outs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      check_same_type(outputs[i], inputs[0], "alltoall");
      check_same_type(inputs[i], inputs[0], "alltoall");
      ins.push_back(view_for_move(staging.readable(inputs[i])));
      outs.push_back(view_for_move(staging.writable(outputs[i])));
    }
    return make(
        c10d::OpType::ALLTOALL, inputs, [&] { return Works{group_->iall_to_all(ins, outs)}; },
        outputs, std::move(staging));
  }

  void monitoredBarrier(const c10d::BarrierOptions& opts, bool /*wait_all_ranks*/) override {
    auto work = group_->ibarrier();
    if (opts.timeout.count() > 0) {
      work->wait(opts.timeout);
    } else {
      work->wait(std::nullopt);
    }
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override {
    const at::Tensor& tensor = single(tensors, "send");
    check_peer(dst, "send");
    Staging staging("send");
    auto view = view_for_move(staging.readable(tensor));
    return make(
        c10d::OpType::SEND, tensors, [&] { return Works{group_->isend(view, dst, tag)}; }, tensors,
        std::move(staging), nullptr, /*collective=*/false);
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override {
    const at::Tensor& tensor = single(tensors, "recv");
    check_peer(src, "recv");
    Staging staging("recv");
    auto view = view_for_move(staging.writable(tensor));
    return make(
        c10d::OpType::RECV, tensors, [&] { return Works{group_->irecv(view, src, tag)}; }, tensors,
        std::move(staging), nullptr, /*collective=*/false);
  }

  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override {
    const at::Tensor& tensor = single(tensors, "recvAnysource");
    Staging staging("recv");
    auto view = view_for_move(staging.writable(tensor));
    return make(
        c10d::OpType::RECVANYSOURCE, tensors,
        [&] { return Works{group_->irecv(view, weft::kAnySource, tag)}; }, tensors,
        std::move(staging), nullptr, /*collective=*/false);
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override {
    return make(
        c10d::OpType::BARRIER, {}, [&] { return Works{group_->ibarrier()}; }, {}, Staging());
  }

 private:
  // The Work comes first, then start() issues the operation: a profiler's event for it
  // (named by profiling_title) covers the whole of it, as gloo's do.
  template <typename Start>  // Works()
  c10::intrusive_ptr<c10d::Work> make(c10d::OpType type, const std::vector<at::Tensor>& inputs,
                                      Start&& start, std::vector<at::Tensor> outputs,
                                      Staging staging, std::function<void()> after = nullptr,
                                      bool collective = true) {
    Orphans::sweep();
    // The inputs are only read by a profiler recording shapes: no copy of the list otherwise.
    auto profiled_inputs =
        at::hasCallbacks() ? c10::optional<std::vector<at::Tensor>>(inputs) : c10::nullopt;
    auto work =
        c10::make_intrusive<WeftWork>(rank_, type, profiling_title(type), profiled_inputs, group_,
                                      std::move(outputs), std::move(staging), std::move(after));
    work->start(start());
    if (collective) ++seq_;
    return work;
  }

  const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* op) const {
    TORCH_CHECK(tensors.size() == 1, "weft: ", op, " takes exactly one tensor per call (got ",
                tensors.size(), ")");
    return tensors[0];
  }
  void check_root(int64_t root, const char* op) const {
    TORCH_CHECK(root >= 0 && root < size_, "weft: ", op, ": invalid root rank ", root,
                " for a group of size ", size_);
  }
  void check_peer(int peer, const char* op) const {
    TORCH_CHECK(peer >= 0 && peer < size_, "weft: ", op, ": invalid peer rank ", peer,
                " for a group of size ", size_);
  }
  // torch's split sizes (rows of dim 0 per rank) as units of weft's view of the tensor; empty:
  // equal blocks. Each must lie in [0, rows] and they must sum to rows, checked before any
  // multiplication and summed with checked arithmetic, so no size can wrap around into a
  // plausible count (2**62 rows of 4 elements is 0 in 64 bits).
  std::vector<std::size_t> split_units(const std::vector<int64_t>& splits, const at::Tensor& t,
                                       const BufferView& view, const char* what) const {
    std::vector<std::size_t> units;
    if (splits.empty()) return units;
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    TORCH_CHECK_VALUE(
        splits.size() == static_cast<std::size_t>(size_), "weft: all_to_all_single on rank ", rank_,
        ": ", what, " holds ", splits.size(), " split sizes for a group of ", size_,
        " ranks (one per rank); the tensor has ", rows, " rows (dim 0), shape ", t.sizes());
    const std::size_t unit = units_per_row(t, view);
    int64_t sum = 0;
    bool wrapped = false;
    for (std::size_t i = 0; i < splits.size(); ++i) {
      const int64_t rows_i = splits[i];
      TORCH_CHECK_VALUE(rows_i >= 0 && rows_i <= rows, "weft: all_to_all_single on rank ", rank_,
                        ": ", what, "[", i, "] is ", rows_i, ", ",
                        rows_i < 0 ? "a negative split size" : "more than the tensor's rows",
                        "; the tensor has ", rows, " rows (dim 0), shape ", t.sizes());
      wrapped = wrapped || __builtin_add_overflow(sum, rows_i, &sum);
      units.push_back(static_cast<std::size_t>(rows_i) * unit);  // <= rows * unit: the count
    }
    TORCH_CHECK_VALUE(!wrapped && sum == rows, "weft: all_to_all_single on rank ", rank_, ": ",
                      what, " sums to ",
                      wrapped ? std::string("more than 2**63") : std::to_string(sum),
                      " rows, but the tensor has ", rows, " rows (dim 0), shape ", t.sizes());
    return units;
  }
  void check_list_size(const std::vector<at::Tensor>& list, const char* what) const {
    TORCH_CHECK(list.size() == static_cast<std::size_t>(size_), "weft: ", what, " must hold ",
                size_, " tensors (got ", list.size(), ")");
  }
  static void check_same_type(const at::Tensor& a, const at::Tensor& b, const char* op) {
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "weft: ", op,
                ": tensors must all have the same dtype (", a.scalar_type(), " vs ",
                b.scalar_type(), ")");
  }

  std::shared_ptr<weft::ProcessGroup> group_;
  std::atomic<uint64_t> seq_{0};
};

c10::intrusive_ptr<c10d::ProcessGroup> create(const c10::intrusive_ptr<c10d::Store>& store,
                                              int rank, int size, double timeout_seconds,
                                              const std::string& group_name) {
  weft::InitOptions options;
  options.store = std::make_shared<TorchStore>(store);
  options.rank = rank;
  options.world_size = size;
  if (timeout_seconds > 0) {
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000.0));
  }
  options.group_name = group_name.empty() ? "default" : group_name;
  std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group(options);
  return c10::make_intrusive<ProcessGroupWeft>(std::move(group), rank, size);
}

}  // namespace

PYBIND11_MODULE(_weft_torch, m) {
  m.doc() =
      "weft as a torch.distributed backend (torch 1.13 c10d::ProcessGroup); "
      "use `import weft.torch`.";
  m.attr("__version__") = weft::version();
  m.attr("BACKEND_NAME") = kBackendName;
  m.def("create", &create, py::arg("store"), py::arg("rank"), py::arg("size"),
        py::arg("timeout_seconds"), py::arg("group_name") = "",
        py::call_guard<py::gil_scoped_release>(),
        "Rendezvous over torch's store and return the c10d ProcessGroup (torch's creator).");
  py::class_<StoragePin>(m, "_StoragePin",
                         "A tensor's storage held and pinned against reallocation (weft._storage).")
      .def("release", &StoragePin::release,
           "Ends the pin (the storage stays held while this object lives).");
  m.def(
      "_pin_storage",
      [](const at::Tensor& tensor) { return std::make_unique<StoragePin>(tensor.storage()); },
      py::arg("tensor"),
      "Holds tensor's storage and makes it non-resizable until release() (pins nest).");
  m.def(
      "weft_group_of",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) -> std::shared_ptr<weft::ProcessGroup> {
        auto* weft_pg = dynamic_cast<ProcessGroupWeft*>(pg.get());
        TORCH_CHECK(weft_pg != nullptr, "weft: this torch group does not run on weft");
        return weft_pg->weft_group();
      },
      py::arg("process_group"),
      "The weft ProcessGroup under a torch group of backend weft (import weft._weft first, "
      "which defines its Python type).");
  m.def(
      "is_weft_group",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
        return dynamic_cast<ProcessGroupWeft*>(pg.get()) != nullptr;
      },
      py::arg("process_group"));
}

}  // namespace weft::torch_backend
