// weft._weft.ProcessGroup and init_process_group: weft's ProcessGroup on numpy arrays and torch
// tensors, in group ranks. Argument order follows torch.distributed (outputs first).
//
// Every operation converts its buffers (with the GIL), then starts the operation without the
// GIL. async_op=True returns a Work that holds the buffers, their tensors kept in place
// (buffers.h: storage held and pinned against reallocation) until it is seen to be over;
// otherwise the call waits for the operation interruptibly (blocking_wait.h). Buffers of a
// blocking call live on this stack.
#include "weft/process_group.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "blocking_wait.h"
#include "buffers.h"
#include "durations.h"
#include "errors.h"
#include "weft/init.h"
#include "weft/store.h"
#include "work.h"
#include "writable_memory.h"

namespace weft::python {

namespace {

using GroupPtr = std::shared_ptr<ProcessGroup>;
using WorkPtr = std::shared_ptr<Work>;

// Starts an operation and, unless async_op, waits for it. Returns the Work or None.
// run_sync (optional) is weft's synchronous form, used when the policy is not interruptible.
py::object run(const GroupPtr& group, const char* op, HeldBuffers held, bool async_op,
               const std::function<WorkPtr()>& start,
               const std::function<void()>& run_sync = nullptr,
               std::chrono::milliseconds timeout = {}) {
  release_finished_orphans();
  if (async_op) keep_in_place(held);  // the operation outlives this call
  if (!async_op && run_sync && !blocking_calls_interruptible(*group)) {
    py::gil_scoped_release release;
    run_sync();
    return py::none();
  }
  WorkPtr work;
  {
    py::gil_scoped_release release;
    work = start();
  }
  auto handle = std::make_shared<PyWork>(std::move(work), group, std::move(held), op, timeout);
  if (async_op) return py::cast(handle);
  handle->wait(std::nullopt);
  return py::none();
}

std::vector<BufferView> hold_writable_list(HeldBuffers& held, py::handle list, const char* what) {
  std::vector<BufferView> views;
  if (list.is_none()) return views;
  std::size_t i = 0;
  for (py::handle item : list) {
    views.push_back(hold_writable(held, item, std::string(what) + "[" + std::to_string(i++) + "]"));
  }
  return views;
}

std::vector<ConstBufferView> hold_readable_list(HeldBuffers& held, py::handle list,
                                                const char* what) {
  std::vector<ConstBufferView> views;
  if (list.is_none()) return views;
  std::size_t i = 0;
  for (py::handle item : list) {
    views.push_back(hold_readable(held, item, std::string(what) + "[" + std::to_string(i++) + "]"));
  }
  return views;
}

// all_to_all_single's split sizes (element counts per peer) as weft takes them: one per rank,
// each an integer in [0, count], summing to count (the elements of the buffer split); None or
// an empty list: equal blocks. Read from Python integers with overflow detection and summed
// with checked arithmetic, so no size wraps on its way to weft: weft.distributed and
// weft._torch2 check rows first, but they are not this binding's only callers.
std::vector<std::size_t> checked_splits(const ProcessGroup& g, py::handle splits, std::size_t count,
                                        const char* what, const char* buffer) {
  std::vector<std::size_t> sizes;
  if (splits.is_none()) return sizes;
  auto problem = [&](const std::string& text) {
    throw_invalid_argument("all_to_all_single on rank " + std::to_string(g.rank()) + ": " + what +
                           text + "; the " + buffer + " holds " + std::to_string(count) +
                           " elements");
  };
  std::uint64_t sum = 0;
  for (py::handle item : py::iter(splits)) {
    std::string at = "[" + std::to_string(sizes.size()) + "] is ";
    auto index = py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()));
    if (!index) {
      PyErr_Clear();
      problem(at + std::string(py::repr(item)) + ", not an integer");
    }
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (value == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (overflow < 0 || (overflow == 0 && value < 0)) {
      problem(at + std::string(py::str(index)) + ", a negative split size");
    }
    if (overflow > 0 || static_cast<std::uint64_t>(value) > count) {
      problem(at + std::string(py::str(index)) + ", more than the buffer holds");
    }
    if (__builtin_add_overflow(sum, static_cast<std::uint64_t>(value), &sum)) {
      problem(" sums past 2**64 elements");
    }
    sizes.push_back(static_cast<std::size_t>(value));
  }
  if (sizes.empty()) return sizes;
  if (sizes.size() != static_cast<std::size_t>(g.size())) {
    problem(" holds " + std::to_string(sizes.size()) + " split sizes for a group of " +
            std::to_string(g.size()) + " ranks (one per rank)");
  }
  if (sum != count) problem(" sums to " + std::to_string(sum) + " elements");
  return sizes;
}

// timeout: None (the group's), a timedelta or seconds bounding this call's waits.
CollectiveOptions options_of(const std::string& algorithm, py::handle timeout) {
  CollectiveOptions options;
  options.algorithm = algorithm;
  options.timeout = milliseconds_or_zero(timeout, "timeout");
  return options;
}

void bind_point_to_point(py::class_<ProcessGroup, GroupPtr>& cls) {
  cls.def(
      "send",
      [](const GroupPtr& g, py::handle tensor, int dst, int tag) {
        HeldBuffers held;
        auto view = hold_readable(held, tensor, "tensor");
        run(
            g, "send", std::move(held), false, [&] { return g->isend(view, dst, tag); },
            [&] { g->send(view, dst, tag); });
      },
      py::arg("tensor"), py::arg("dst"), py::arg("tag") = 0);
  cls.def(
      "recv",
      [](const GroupPtr& g, py::handle tensor, int src, int tag) -> int {
        HeldBuffers held;
        auto view = hold_writable(held, tensor, "tensor");
        release_finished_orphans();
        if (!blocking_calls_interruptible(*g)) {
          py::gil_scoped_release release;
          return g->recv(view, src, tag);
        }
        WorkPtr work;
        {
          py::gil_scoped_release release;
          work = g->irecv(view, src, tag);
        }
        PyWork handle(work, g, std::move(held), "recv");
        handle.wait(std::nullopt);
        return handle.source_rank();
      },
      py::arg("tensor"), py::arg("src") = -1, py::arg("tag") = 0,
      "Receives into tensor; returns the group rank it came from (src=-1: any source).");
  cls.def(
      "isend",
      [](const GroupPtr& g, py::handle tensor, int dst, int tag) {
        HeldBuffers held;
        auto view = hold_readable(held, tensor, "tensor");
        return run(g, "isend", std::move(held), true, [&] { return g->isend(view, dst, tag); });
      },
      py::arg("tensor"), py::arg("dst"), py::arg("tag") = 0);
  cls.def(
      "irecv",
      [](const GroupPtr& g, py::handle tensor, int src, int tag) {
        HeldBuffers held;
        auto view = hold_writable(held, tensor, "tensor");
        return run(g, "irecv", std::move(held), true, [&] { return g->irecv(view, src, tag); });
      },
      py::arg("tensor"), py::arg("src") = -1, py::arg("tag") = 0);
  cls.def(
      "batch_isend_irecv",
      [](const GroupPtr& g, const std::vector<py::tuple>& ops) {
        // Each op: (is_send, tensor, peer, tag). One Work per op, in the order given.
        std::vector<P2POp> p2p;
        std::vector<HeldBuffers> held(ops.size());
        for (std::size_t i = 0; i < ops.size(); ++i) {
          const py::tuple& t = ops[i];
          if (t.size() != 4)
            throw py::type_error("batch_isend_irecv takes (is_send, tensor, peer, tag)");
          bool is_send = t[0].cast<bool>();
          int peer = t[2].cast<int>(), tag = t[3].cast<int>();
          std::string what = "p2p_op_list[" + std::to_string(i) + "].tensor";
          p2p.push_back(is_send ? P2POp::send(hold_readable(held[i], t[1], what), peer, tag)
                                : P2POp::recv(hold_writable(held[i], t[1], what), peer, tag));
        }
        release_finished_orphans();
        for (auto& buffers : held) keep_in_place(buffers);
        std::vector<WorkPtr> works;
        {
          py::gil_scoped_release release;
          works = g->batch_isend_irecv(p2p);
        }
        py::list out;
        for (std::size_t i = 0; i < works.size(); ++i) {
          bool is_send = p2p[i].kind == P2POp::Kind::kSend;
          out.append(std::make_shared<PyWork>(works[i], g, std::move(held[i]),
                                              is_send ? "isend" : "irecv"));
        }
        return out;
      },
      py::arg("ops"));
}

void bind_collectives(py::class_<ProcessGroup, GroupPtr>& cls) {
  cls.def(
      "broadcast",
      [](const GroupPtr& g, py::handle tensor, int root, bool async_op, const std::string& algo,
         py::handle timeout) {
        HeldBuffers held;
        auto view = hold_writable(held, tensor, "tensor");
        auto options = options_of(algo, timeout);
        return run(
            g, "broadcast", std::move(held), async_op,
            [&] { return g->ibroadcast(view, root, options); },
            [&] { g->broadcast(view, root, options); }, options.timeout);
      },
      py::arg("tensor"), py::arg("root"), py::arg("async_op") = false, py::arg("algorithm") = "",
      py::arg("timeout") = py::none());
  cls.def(
      "all_reduce",
      [](const GroupPtr& g, py::handle tensor, ReduceOp op, bool async_op, const std::string& algo,
         py::handle timeout) {
        HeldBuffers held;
        auto view = hold_writable(held, tensor, "tensor");
        auto options = options_of(algo, timeout);
        return run(
            g, "all_reduce", std::move(held), async_op,
            [&] { return g->iall_reduce(view, op, options); },
            [&] { g->all_reduce(view, op, options); }, options.timeout);
      },
      py::arg("tensor"), py::arg("op") = ReduceOp(), py::arg("async_op") = false,
      py::arg("algorithm") = "", py::arg("timeout") = py::none());
  cls.def(
      "reduce",
      [](const GroupPtr& g, py::handle tensor, int root, ReduceOp op, bool async_op,
         const std::string& algo, py::handle timeout) {
        HeldBuffers held;
        auto view = hold_writable(held, tensor, "tensor");
        auto options = options_of(algo, timeout);
        return run(
            g, "reduce", std::move(held), async_op,
            [&] { return g->ireduce(view, root, op, options); },
            [&] { g->reduce(view, root, op, options); }, options.timeout);
      },
      py::arg("tensor"), py::arg("root"), py::arg("op") = ReduceOp(), py::arg("async_op") = false,
      py::arg("algorithm") = "", py::arg("timeout") = py::none());
  cls.def(
      "all_gather_into_tensor",
      [](const GroupPtr& g, py::handle output, py::handle input, bool async_op,
         const std::string& algo, py::handle timeout) {
        HeldBuffers held;
        auto out = hold_writable(held, output, "output_tensor");
        auto in = hold_readable(held, input, "input_tensor");
        auto options = options_of(algo, timeout);
        return run(
            g, "all_gather_into_tensor", std::move(held), async_op,
            [&] { return g->iall_gather(in, out, options); },
            [&] { g->all_gather(in, out, options); }, options.timeout);
      },
      py::arg("output_tensor"), py::arg("input_tensor"), py::arg("async_op") = false,
      py::arg("algorithm") = "", py::arg("timeout") = py::none());
  cls.def(
      "all_gather",
      [](const GroupPtr& g, py::sequence outputs, py::handle input, bool async_op,
         const std::string& algo, py::handle timeout) {
        HeldBuffers held;
        auto outs = hold_writable_list(held, outputs, "tensor_list");
        auto in = hold_readable(held, input, "tensor");
        auto options = options_of(algo, timeout);
        return run(
            g, "all_gather", std::move(held), async_op,
            [&] { return g->iall_gather(in, outs, options); },
            [&] { g->all_gather(in, outs, options); }, options.timeout);
      },
      py::arg("tensor_list"), py::arg("tensor"), py::arg("async_op") = false,
      py::arg("algorithm") = "", py::arg("timeout") = py::none());
  cls.def(
      "gather",
      [](const GroupPtr& g, py::handle input, py::object outputs, int root, bool async_op,
         const std::string& algo, py::handle timeout) {
        HeldBuffers held;
        auto in = hold_readable(held, input, "tensor");
        auto outs = hold_writable_list(held, outputs, "gather_list");
        auto options = options_of(algo, timeout);
        return run(
            g, "gather", std::move(held), async_op,
            [&] { return g->igather(in, outs, root, options); },
            [&] { g->gather(in, outs, root, options); }, options.timeout);
      },
      py::arg("tensor"), py::arg("gather_list"), py::arg("root"), py::arg("async_op") = false,
      py::arg("algorithm") = "", py::arg("timeout") = py::none());
  cls.def(
      "scatter",
      [](const GroupPtr& g, py::handle output, py::object inputs, int root, bool async_op,
         const std::string& algo, py::handle timeout) {
        HeldBuffers held;
        auto out = hold_writable(held, output, "tensor");
        auto ins = hold_readable_list(held, inputs, "scatter_list");
        auto options = options_of(algo, timeout);
        return run(
            g, "scatter", std::move(held), async_op,
            [&] { return g->iscatter(ins, out, root, options); },
            [&] { g->scatter(ins, out, root, options); }, options.timeout);
      },
      py::arg("tensor"), py::arg("scatter_list"), py::arg("root"), py::arg("async_op") = false,
      py::arg("algorithm") = "", py::arg("timeout") = py::none());
  cls.def(
      "reduce_scatter_tensor",
      [](const GroupPtr& g, py::handle output, py::handle input, ReduceOp op, bool async_op,
         const std::string& algo, py::handle timeout) {
        HeldBuffers held;
        auto out = hold_writable(held, output, "output");
        auto in = hold_readable(held, input, "input");
        auto options = options_of(algo, timeout);
        return run(
            g, "reduce_scatter_tensor", std::move(held), async_op,
            [&] { return g->ireduce_scatter(in, out, op, options); },
            [&] { g->reduce_scatter(in, out, op, options); }, options.timeout);
      },
      py::arg("output"), py::arg("input"), py::arg("op") = ReduceOp(), py::arg("async_op") = false,
      py::arg("algorithm") = "", py::arg("timeout") = py::none());
  cls.def(
      "reduce_scatter",
      [](const GroupPtr& g, py::handle output, py::sequence inputs, ReduceOp op, bool async_op,
         const std::string& algo, py::handle timeout) {
        HeldBuffers held;
        auto out = hold_writable(held, output, "output");
        auto ins = hold_readable_list(held, inputs, "input_list");
        auto options = options_of(algo, timeout);
        return run(
            g, "reduce_scatter", std::move(held), async_op,
            [&] { return g->ireduce_scatter(ins, out, op, options); },
            [&] { g->reduce_scatter(ins, out, op, options); }, options.timeout);
      },
      py::arg("output"), py::arg("input_list"), py::arg("op") = ReduceOp(),
      py::arg("async_op") = false, py::arg("algorithm") = "", py::arg("timeout") = py::none());
  cls.def(
      "all_to_all_single",
      [](const GroupPtr& g, py::handle output, py::handle input, py::handle output_split_sizes,
         py::handle input_split_sizes, bool async_op, const std::string& algo, py::handle timeout) {
        HeldBuffers held;
        auto out = hold_writable(held, output, "output");
        auto in = hold_readable(held, input, "input");
        auto output_splits =
            checked_splits(*g, output_split_sizes, out.count(), "output_split_sizes", "output");
        auto input_splits =
            checked_splits(*g, input_split_sizes, in.count(), "input_split_sizes", "input");
        auto options = options_of(algo, timeout);
        return run(
            g, "all_to_all_single", std::move(held), async_op,
            [&] { return g->iall_to_all(in, out, input_splits, output_splits, options); },
            [&] { g->all_to_all(in, out, input_splits, output_splits, options); }, options.timeout);
      },
      py::arg("output"), py::arg("input"), py::arg("output_split_sizes") = py::none(),
      py::arg("input_split_sizes") = py::none(), py::arg("async_op") = false,
      py::arg("algorithm") = "", py::arg("timeout") = py::none(),
      "Split sizes are element counts per peer (None or an empty list: equal blocks), each in "
      "[0, the buffer's count], one per rank, summing to the count.");
  cls.def(
      "all_to_all",
      [](const GroupPtr& g, py::sequence outputs, py::sequence inputs, bool async_op,
         const std::string& algo, py::handle timeout) {
        HeldBuffers held;
        auto outs = hold_writable_list(held, outputs, "output_tensor_list");
        auto ins = hold_readable_list(held, inputs, "input_tensor_list");
        auto options = options_of(algo, timeout);
        return run(
            g, "all_to_all", std::move(held), async_op,
            [&] { return g->iall_to_all(ins, outs, options); },
            [&] { g->all_to_all(ins, outs, options); }, options.timeout);
      },
      py::arg("output_tensor_list"), py::arg("input_tensor_list"), py::arg("async_op") = false,
      py::arg("algorithm") = "", py::arg("timeout") = py::none());
  cls.def(
      "barrier",
      [](const GroupPtr& g, bool async_op, py::handle timeout) {
        auto options = options_of("", timeout);
        return run(
            g, "barrier", {}, async_op, [&] { return g->ibarrier(options); },
            [&] { g->barrier(options); }, options.timeout);
      },
      py::arg("async_op") = false, py::arg("timeout") = py::none());
  // scan and exscan have no asynchronous form in weft: they run on this thread.
  for (bool exclusive : {false, true}) {
    cls.def(
        exclusive ? "exscan" : "scan",
        [exclusive](const GroupPtr& g, py::handle output, py::handle input, ReduceOp op,
                    py::handle timeout) {
          HeldBuffers held;
          auto out = hold_writable(held, output, "output");
          auto in = hold_readable(held, input, "input");
          auto options = options_of("", timeout);
          release_finished_orphans();
          py::gil_scoped_release release;
          exclusive ? g->exscan(in, out, op, options) : g->scan(in, out, op, options);
        },
        py::arg("output"), py::arg("input"), py::arg("op") = ReduceOp(),
        py::arg("timeout") = py::none(),
        exclusive ? "MPI_Exscan: rank r gets the reduction of ranks 0..r-1 (rank 0's output "
                    "is left untouched)."
                  : "MPI_Scan: rank r gets the reduction of ranks 0..r.");
  }
}

}  // namespace

void register_process_group(py::module_& m) {
  auto cls = py::class_<ProcessGroup, GroupPtr>(m, "ProcessGroup", R"doc(
A set of ranks that communicate (weft::ProcessGroup). Ranks here are this group's ranks;
weft.distributed translates torch's global ranks.)doc");
  cls.def("rank", &ProcessGroup::rank)
      .def("size", &ProcessGroup::size)
      .def_property_readonly("name", &ProcessGroup::name)
      .def_property_readonly("timeout",
                             [](const ProcessGroup& g) { return to_timedelta(g.timeout()); })
      .def(
          "new_group",
          [](ProcessGroup& g, const std::vector<int>& ranks, py::handle timeout) {
            auto span = milliseconds_or_zero(timeout, "timeout");
            py::gil_scoped_release release;
            return g.new_group(ranks, span);
          },
          py::arg("ranks"), py::arg("timeout") = py::none(),
          "Collective over this group: every member calls it with the same ranks. Returns the "
          "new group on its members, None on the others. timeout (timedelta or seconds) bounds "
          "the new group's waits; None: this group's timeout.")
      .def(
          "split",
          [](ProcessGroup& g, int color, int key, py::handle timeout) {
            auto span = milliseconds_or_zero(timeout, "timeout");
            py::gil_scoped_release release;
            return g.split(color, key, span);
          },
          py::arg("color"), py::arg("key") = 0, py::arg("timeout") = py::none(),
          "MPI_Comm_split: members with the same color form a group ordered by (key, rank); "
          "color < 0 joins none (None). timeout as new_group's.")
      .def(
          "shrink",
          [](ProcessGroup& g, py::handle timeout) {
            auto span = milliseconds_or_zero(timeout, "timeout");
            py::gil_scoped_release release;
            return g.shrink(span);
          },
          py::arg("timeout") = py::none(),
          "Called by every surviving member after a failure: aborts this group and returns a "
          "new group of the members still alive, ranked in this group's order. A member that "
          "has not called it within timeout (timedelta or seconds; None: this group's timeout) "
          "or that a survivor saw fail is left out, and raises AbortedError if it calls.")
      .def("abort", &ProcessGroup::abort, py::arg("reason") = "aborted by the user",
           py::call_guard<py::gil_scoped_release>())
      .def("_set_blocking_calls_interruptible", &set_blocking_calls_interruptible,
           py::arg("interruptible"),
           "False: this group's blocking calls run as weft's synchronous calls on the calling "
           "thread (no hand-off to the worker), and Ctrl-C waits for them to finish or time "
           "out, as with torch's own backends. The torch backend sets it.")
      .def("__repr__", [](const ProcessGroup& g) {
        return "<weft ProcessGroup '" + g.name() + "' rank " + std::to_string(g.rank()) + "/" +
               std::to_string(g.size()) + ">";
      });
  bind_point_to_point(cls);
  bind_collectives(cls);

  m.def(
      "init_process_group",
      [](const std::string& init_method, int rank, int world_size, std::shared_ptr<Store> store,
         py::object timeout, const std::string& group_name) {
        InitOptions options;
        options.init_method = init_method;
        options.rank = rank;
        options.world_size = world_size;
        options.store = std::move(store);
        options.timeout = milliseconds_or_zero(timeout, "timeout");
        options.group_name = group_name;
        py::gil_scoped_release release;
        return init_process_group(options);
      },
      py::arg("init_method") = "", py::arg("rank") = -1, py::arg("world_size") = -1,
      py::arg("store") = nullptr, py::arg("timeout") = py::none(),
      py::arg("group_name") = "default",
      "Joins the job (weft::init_process_group): env://, tcp://host:port or file:///path, or an "
      "existing store. Returns the world group.");

  m.def(
      "launch_info",
      [] {
        LaunchInfo info = launch_info();
        auto or_none = [](int value) -> py::object {
          return value < 0 ? py::none() : py::object(py::int_(value));
        };
        py::dict fields;
        fields["launcher"] = info.launcher;
        fields["rank"] = or_none(info.rank);
        fields["world_size"] = or_none(info.world_size);
        fields["local_rank"] = or_none(info.local_rank);
        fields["local_world_size"] = or_none(info.local_world_size);
        fields["master_addr"] = info.master_addr.empty() ? py::object(py::none())
                                                         : py::object(py::str(info.master_addr));
        fields["master_port"] = or_none(info.master_port);
        return fields;
      },
      "Where this process sits in its job, as its launcher's variables say (weft::launch_info): "
      "a dict of launcher, rank, world_size, local_rank, local_world_size, master_addr and "
      "master_port, None for what the environment does not say.");
  m.def(
      "buffer_info",
      [](py::handle object, bool writable) {
        HeldBuffer held(object, writable, "buffer");
        auto view = held.view();
        return py::make_tuple(std::string(name_of(view.dtype())), view.count(),
                              reinterpret_cast<std::uintptr_t>(view.data()));
      },
      py::arg("buffer"), py::arg("writable") = false,
      "(dtype name, element count, address) of an array or tensor as weft sees it.");
  m.def(
      "_memory_writable",
      [](std::uintptr_t address, std::size_t bytes) {
        return probe_writable(reinterpret_cast<const void*>(address), bytes) !=
               MemoryAccess::kNotWritable;
      },
      py::arg("address"), py::arg("bytes"),
      "False when this process cannot write [address, address + bytes): a read-only mapping "
      "(the first and last byte are probed; writable_memory.h).");
}

}  // namespace weft::python
