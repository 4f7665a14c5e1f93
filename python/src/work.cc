#include "work.h"

#include <vector>

#include "bindings.h"
#include "blocking_wait.h"
#include "durations.h"
#include "errors.h"

namespace weft::python {

namespace {

struct Orphan {
  std::shared_ptr<Work> work;
  HeldBuffers buffers;
};

// Never freed: orphans hold Python objects, which must not be released after the interpreter
// has finalized (a static vector's destructor would run then).
std::vector<Orphan>& orphans() {
  static auto* list = new std::vector<Orphan>();
  return *list;
}

}  // namespace

void release_finished_orphans() {
  auto& list = orphans();
  if (list.empty()) return;
  // Destroyed after the list is consistent again: releasing buffers runs Python code (pins,
  // finalizers), which may drop other Works and so add orphans.
  std::vector<Orphan> done;
  for (auto it = list.begin(); it != list.end();) {
    if (it->work->is_completed()) {
      done.push_back(std::move(*it));
      it = list.erase(it);
    } else {
      ++it;
    }
  }
}

PyWork::PyWork(std::shared_ptr<Work> work, std::shared_ptr<ProcessGroup> group, HeldBuffers buffers,
               std::string op, std::chrono::milliseconds timeout)
    : work_(std::move(work)),
      group_(std::move(group)),
      buffers_(std::move(buffers)),
      op_(std::move(op)),
      timeout_(timeout) {}

PyWork::~PyWork() {
  if (!buffers_.empty() && work_ && !work_->is_completed()) {
    try {
      keep_in_place(buffers_);  // a blocking operation's buffers were not pinned yet
    } catch (py::error_already_set& error) {
      error.discard_as_unraisable("weft: keeping an orphaned operation's tensors in place");
    }
    orphans().push_back(Orphan{work_, std::move(buffers_)});
  }
}

bool PyWork::is_completed() {
  if (!work_->is_completed()) return false;
  release_pins(buffers_);
  return true;
}

void PyWork::wait(std::optional<std::chrono::milliseconds> timeout) {
  using Clock = std::chrono::steady_clock;
  // Without a timeout, the operation's own deadline (its timeout, else the group's) bounds it;
  // weft's wait below reports it with the operation's context once the polling has given up.
  auto limit = timeout ? *timeout : timeout_.count() > 0 ? timeout_ : group_->timeout();
  auto outcome = poll_until_done(*work_, Clock::now() + limit);
  if (outcome == WaitOutcome::kInterrupted) {
    {
      py::gil_scoped_release release;
      group_->abort("interrupted by a signal (Ctrl-C) while waiting for " + op_);
    }
    if (!work_->is_completed()) {
      // The aborted operation may still touch its buffers for a moment: keep them in place.
      // The KeyboardInterrupt is pending: set it aside while calling Python.
      py::error_already_set interrupt;
      try {
        keep_in_place(buffers_);
      } catch (py::error_already_set& error) {
        error.discard_as_unraisable("weft: keeping an interrupted operation's tensors in place");
      }
      orphans().push_back(Orphan{work_, std::move(buffers_)});
      throw interrupt;
    }
    throw py::error_already_set();
  }
  try {
    py::gil_scoped_release release;
    if (outcome == WaitOutcome::kCompleted || !timeout) {
      work_->wait(std::nullopt);
    } else {
      work_->wait(std::chrono::milliseconds(1));  // throws kTimeout and cancels
    }
  } catch (...) {
    if (work_->is_completed()) release_pins(buffers_);  // failed, but over
    throw;
  }
  release_pins(buffers_);
}

py::object PyWork::exception() const {
  if (!work_->is_completed()) return py::none();
  return exception_object(work_->exception());
}

void register_work(py::module_& m) {
  py::class_<PyWork, std::shared_ptr<PyWork>>(m, "Work", R"doc(
Handle of an operation started with async_op=True (or isend/irecv), as torch.distributed's Work.
Do not touch its tensors until wait() has returned or is_completed() is true.)doc")
      .def(
          "wait",
          [](PyWork& self, py::object timeout) {
            self.wait(optional_milliseconds(timeout, "timeout"));
            return true;
          },
          py::arg("timeout") = py::none(),
          "Blocks until the operation finished (Ctrl-C interrupts); raises its error. With a "
          "timeout (timedelta or seconds) raises TimeoutError when it passes first. Returns True.")
      .def("is_completed", &PyWork::is_completed)
      .def("is_success", &PyWork::is_success)
      .def("exception", &PyWork::exception,
           "The exception of a failed operation, None while running or after success.")
      .def("source_rank", &PyWork::source_rank,
           "Group rank a completed receive came from; -1 for other operations.")
      .def("_source_rank", &PyWork::source_rank)
      .def_property_readonly("op", &PyWork::op)
      .def("__repr__", [](PyWork& self) {
        return "<weft Work " + self.op() + (self.is_completed() ? " completed>" : " running>");
      });

  m.def(
      "_set_wait_policy",
      [](bool interruptible, int spin_us, int first_sleep_us, int max_sleep_us) {
        wait_policy() = WaitPolicy{interruptible, spin_us, first_sleep_us, max_sleep_us};
      },
      py::arg("interruptible") = true, py::arg("spin_us") = 50, py::arg("first_sleep_us") = 20,
      py::arg("max_sleep_us") = 1000,
      "Tuning for benchmarks and tests: how blocking calls wait (see blocking_wait.h).");
  m.def("_num_orphans", [] { return orphans().size(); });
}

}  // namespace weft::python
