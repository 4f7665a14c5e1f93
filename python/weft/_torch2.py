"""The backend "weft" for torch >= 2.0: a Python subclass of torch's ProcessGroup over weft's
own extension (weft._weft), so nothing here is compiled against torch's C++ ABI and one build
serves every torch 2.x. docs/torch-backend.md says why and what it costs per call.

torch 2.x calls a backend in two ways:
  * from Python (torch.distributed.all_reduce(...) calls ``group.allreduce([t], opts)``):
    Python finds the methods below by name, so every operation is reachable;
  * from C++ (DistributedDataParallel's reducer, its parameter broadcast and checks): through
    torch's trampoline, which forwards allreduce, allgather, broadcast, barrier, send, recv,
    reduce_scatter, all_to_all_single and the coalesced forms to Python.

A synchronous call (opts.asyncOp False, as torch.distributed sets it for async_op=False) runs
weft's blocking form and returns None, which torch accepts as "already synchronised": no Work
object and no hand-off to weft's worker thread. Everything else returns a _WeftWork.

Tensors reach weft in place when they are contiguous CPU tensors of one of weft's dtypes.
Data movement of any other dtype (complex, float8, ...) moves the bytes; a non-contiguous
tensor goes through a contiguous copy that is written back when the operation completes.
"""

import atexit as _atexit
import datetime as _datetime
import queue as _queue
import threading as _threading
import weakref as _weakref

import torch as _torch
import torch.distributed as _dist

from . import _splits, _storage, _weft

_c10d = _torch._C._distributed_c10d

BACKEND_NAME = "weft"

_RedOpType = _dist.ReduceOp.RedOpType
_REDUCE_OPS = {
    _RedOpType.SUM: _weft.ReduceOp("SUM"),
    _RedOpType.AVG: _weft.ReduceOp("AVG"),
    _RedOpType.PRODUCT: _weft.ReduceOp("PRODUCT"),
    _RedOpType.MIN: _weft.ReduceOp("MIN"),
    _RedOpType.MAX: _weft.ReduceOp("MAX"),
    _RedOpType.BAND: _weft.ReduceOp("BAND"),
    _RedOpType.BOR: _weft.ReduceOp("BOR"),
    _RedOpType.BXOR: _weft.ReduceOp("BXOR"),
}

# torch dtypes weft reduces natively; other dtypes move as bytes.
_NATIVE_DTYPES = frozenset({
    _torch.float32, _torch.float64, _torch.float16, _torch.bfloat16, _torch.int8, _torch.uint8,
    _torch.int16, _torch.int32, _torch.int64, _torch.bool,
})

# Reductions that act on a complex number's real and imaginary parts independently.
_COMPLEX_OPS = frozenset({_RedOpType.SUM, _RedOpType.AVG, _RedOpType.PREMUL_SUM})

_ASYNC = True  # options built in C++ (DDP) default to asynchronous

# torch.profiler: every operation is an event named as gloo's are, with "weft:" for "gloo:"
# (weft:all_reduce, weft:broadcast, weft:send, ...). record_function costs microseconds even
# with no profiler on; asking whether one is on costs tens of nanoseconds, so ask first.
_profiling = _torch._C._autograd._profiler_enabled
_record_function = _torch.autograd.profiler.record_function


def _profiled(title, start, async_op):
    """start(async_op), inside a profiler event named title when a profiler is on. The event
    covers a synchronous operation and the start of an asynchronous one."""
    if _profiling():
        with _record_function(title):
            return start(async_op)
    return start(async_op)


def _weft_op(reduce_op):
    kind = getattr(reduce_op, "op", reduce_op)  # a ReduceOp, or a RedOpType
    op = _REDUCE_OPS.get(kind)
    if op is not None:
        return op
    if kind == _RedOpType.PREMUL_SUM:
        factor = _premul_factor(reduce_op)
        return _weft.ReduceOp.premul_sum(factor)
    raise _weft.InvalidArgumentError(f"weft: reduce op {reduce_op} is not supported")


def _kind(reduce_op):
    return getattr(reduce_op, "op", reduce_op)


def _premul_factor(reduce_op):
    factor = getattr(reduce_op, "factor", None)
    if factor is None:
        raise _weft.InvalidArgumentError("weft: PREMUL_SUM without a readable factor")
    if isinstance(factor, _torch.Tensor):
        if factor.numel() != 1:
            raise _weft.InvalidArgumentError("weft: PREMUL_SUM takes a scalar factor")
        factor = factor.item()
    return float(factor)


_NO_TIMEOUT = _datetime.timedelta(0)


def _timeout_of(opts):
    """The op's own timeout (torch's options carry -1 ms when unset), or None."""
    timeout = getattr(opts, "timeout", None)
    if timeout is None or timeout <= _NO_TIMEOUT:
        return None
    return timeout


def _synchronous(opts):
    """A call torch made with async_op=False and no timeout of its own: weft's blocking form."""
    return not getattr(opts, "asyncOp", _ASYNC) and _timeout_of(opts) is None


class _Staging:
    """Tensors handed to weft in another form than the caller's, and what to do when the
    operation has finished (copy a contiguous staging tensor back into the caller's)."""

    __slots__ = ("copies",)

    def __init__(self):
        self.copies = []

    # reduce: the reduction's RedOpType when weft reduces the values, None when it moves them
    def readable(self, tensor, reduce=None):
        return self._as_weft(tensor, reduce, writable=False)

    def writable(self, tensor, reduce=None):
        return self._as_weft(tensor, reduce, writable=True)

    def _as_weft(self, tensor, reduce, writable):
        if not isinstance(tensor, _torch.Tensor):
            raise _weft.InvalidArgumentError(f"weft: expected a torch.Tensor, got {type(tensor).__name__}")
        if tensor.device.type != "cpu":
            raise _weft.InvalidArgumentError(f"weft: tensors must be on the CPU, not {tensor.device}")
        if tensor.layout != _torch.strided:
            raise _weft.InvalidArgumentError(f"weft: {tensor.layout} tensors are not supported")
        staged = tensor if tensor.is_contiguous() else tensor.contiguous()
        if writable and staged is not tensor:
            # torch writes the result back, not weft (which checks what it writes itself).
            _check_writable(tensor)
            self.copies.append((tensor, staged))
        if tensor.dtype in _NATIVE_DTYPES:
            return staged
        if tensor.is_complex() and reduce is not None:
            if reduce not in _COMPLEX_OPS:
                raise _weft.InvalidArgumentError(
                    f"weft: {reduce} is not defined on complex tensors (SUM, AVG and PREMUL_SUM "
                    "are)")
            return _torch.view_as_real(staged)
        if reduce is not None:
            raise _weft.InvalidArgumentError(f"weft: reductions on {tensor.dtype} are not supported")
        return staged.reshape(-1).view(_torch.uint8)

    def finish(self):
        for tensor, staged in self.copies:
            tensor.copy_(staged)
        self.copies = []


class _Completer:
    """Completes the futures of one group's collectives in issue order (weft finishes them in
    that order) on one thread, so DDP's bucket callbacks run as soon as each all_reduce is done
    while the caller goes on with the backward pass. Started at the first get_future()."""

    def __init__(self, name):
        self._pending = _queue.SimpleQueue()
        self._thread = _threading.Thread(target=self._run, name=f"weft-futures-{name}",
                                         daemon=True)
        self._thread.start()

    def add(self, work):
        self._pending.put(work)

    def _run(self):
        while True:
            work = self._pending.get()
            if work is None:
                return
            work._settle_future()

    def close(self):
        """Ends the thread once it has completed what was queued. Joined, so that it is gone
        before the interpreter finalises: a daemon thread still dropping a future's tensors
        then would be stopped inside torch's deallocator, which aborts the process."""
        self._pending.put(None)
        if _threading.current_thread() is not self._thread:
            self._thread.join(timeout=60)


def _value_or_raise(future):
    return future.wait()


class _WeftWork(_dist._Work):
    """torch's Work over a weft Work: wait(timeout), is_completed(), get_future() and friends.
    result() and the future's value are the op's output tensors."""

    def __init__(self, work, group, outputs, staging=None, source=False):
        super().__init__()
        self._work = work
        self._group = group
        self._outputs = outputs
        self._staging = staging
        self._source = source
        self._finished = False
        self._future = None
        self._settled = None
        self._lock = _threading.Lock()

    def _finish(self):
        with self._lock:
            if not self._finished:
                self._finished = True
                if self._staging is not None:
                    self._staging.finish()

    def wait(self, timeout=None):
        if self._work is not None:
            if timeout is not None and timeout <= _datetime.timedelta(0):
                timeout = None
            self._work.wait(timeout)
        self._finish()
        return True

    def is_completed(self):
        return self._work is None or self._work.is_completed()

    def is_success(self):
        return self._work is None or self._work.is_success()

    def exception(self):
        return None if self._work is None else self._work.exception()

    def source_rank(self):
        if not self._source or self._work is None:
            return -1
        return self._work.source_rank()

    _source_rank = source_rank

    def result(self):
        self.wait()
        return self._outputs

    def synchronize(self):
        self.wait()

    def get_future(self):
        if self._future is None:
            # torch's C++ side (DDP's reducer) sees a Python set_exception as a result that holds
            # the exception, and takes it for the tensors: a future chained by then() instead
            # carries a real error when the callback raises.
            self._settled = _torch.futures.Future()
            self._future = self._settled.then(_value_or_raise)
            if self.is_completed():
                self._settle_future()
            elif self._source or not self._group._collectives_in_order:
                _threading.Thread(target=self._settle_future, daemon=True).start()
            else:
                self._group._completer().add(self)
        return self._future

    def _settle_future(self):
        try:
            self.wait()
        except BaseException as error:  # noqa: BLE001  (the future carries every failure)
            self._settled.set_exception(error)
        else:
            self._settled.set_result(self._outputs)


class WeftProcessGroup(_dist.ProcessGroup):
    """A torch.distributed process group whose operations run on a weft group."""

    _collectives_in_order = True

    def __init__(self, store, rank, size, timeout, name):
        super().__init__(rank, size)
        seconds = timeout.total_seconds() if timeout is not None else 0.0
        self._timeout = timeout
        self._weft = _weft.init_process_group(
            store=_weft.PythonObjectStore(store, timeout=seconds or None), rank=rank,
            world_size=size, timeout=seconds or None, group_name=name)
        # Synchronous ops run on the calling thread, as torch's backends do (Ctrl-C waits for
        # them), rather than on weft's worker with an interruptible wait.
        self._weft._set_blocking_calls_interruptible(False)
        self._futures = None
        self._seq = 0
        self._group_name = name
        self._group_desc = ""
        _live_groups.add(self)

    # --- identity -------------------------------------------------------------------------
    def getBackendName(self):  # noqa: N802  (torch's trampoline looks up this name)
        return BACKEND_NAME

    # torch returns a ProcessGroup subclass from the creator as it is, without registering a
    # backend per device in it, so its own _device_types (the devices of those backends) would
    # be empty: torch.distributed.checkpoint (async_save, sharded state dicts) and the
    # state-dict helpers (broadcast_from_rank0) read it to find the group's device. This group
    # serves the CPU, and is its own backend for it.
    @property
    def _device_types(self):
        return [_torch.device("cpu")]

    def _get_backend(self, device):
        if _torch.device(device).type != "cpu":
            raise RuntimeError(f"weft: the process group serves the CPU, not {device}")
        return self

    def name(self):
        return BACKEND_NAME

    @property
    def weft_group(self):
        """The weft._weft.ProcessGroup under this torch group."""
        return self._weft

    # torch's base class keeps a group's name and description in its backends, and this group
    # has none: torch's trampoline asks these methods instead.
    def getGroupName(self):  # noqa: N802
        return self._group_name

    def setGroupName(self, name):  # noqa: N802
        self._group_name = name

    def getGroupDesc(self):  # noqa: N802
        return self._group_desc

    def setGroupDesc(self, desc):  # noqa: N802
        self._group_desc = desc

    def _get_sequence_number_for_group(self):
        return self._seq

    def _set_sequence_number_for_group(self):
        self._seq = 0

    def abort(self):
        self._weft.abort("aborted through torch.distributed")

    def shutdown(self):
        """Ends the weft group now (torch's destroy_process_group calls this), not whenever
        the interpreter gets to the object: a group ended at exit would take the GIL too late."""
        if self._futures is not None:
            self._futures.close()
            self._futures = None
        self._weft = _ShutDown(self._weft.name) if not isinstance(self._weft, _ShutDown) \
            else self._weft
        _live_groups.discard(self)

    def _completer(self):
        if self._futures is None:
            self._futures = _Completer(self._weft.name)
        return self._futures

    # --- running an operation -------------------------------------------------------------
    def _run(self, title, opts, outputs, staging, start):
        """Starts an operation; returns None when it ran synchronously, else its Work.
        title: the operation's name in torch.profiler's trace (gloo's, with weft:)."""
        self._seq += 1
        if _synchronous(opts):
            _profiled(title, start, False)
            if staging is not None:
                staging.finish()
            return None
        work = _WeftWork(_profiled(title, start, True), self, outputs, staging)
        timeout = _timeout_of(opts)
        if timeout is not None:
            work.wait(timeout)
        return work

    @staticmethod
    def _single(tensors, what):
        if len(tensors) != 1:
            raise _weft.InvalidArgumentError(f"weft: {what} takes one tensor per call (CPU), got {len(tensors)}")
        return tensors[0]

    # --- collectives ----------------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        opts = opts if opts is not None else _c10d.AllreduceOptions()
        tensor = self._single(tensors, "allreduce")
        reduce_op = opts.reduceOp
        g = self._weft
        if type(tensor) is _torch.Tensor and tensor.dtype in _NATIVE_DTYPES and \
                tensor.is_cpu and tensor.is_contiguous():
            if _synchronous(opts):  # the common case, kept short: it is paid on every call
                self._seq += 1
                if _profiling():
                    with _record_function("weft:all_reduce"):
                        g.all_reduce(tensor, _weft_op(reduce_op), False)
                else:
                    g.all_reduce(tensor, _weft_op(reduce_op), False)
                return None
            staging, buffer = None, tensor
        else:
            staging = _Staging()
            buffer = staging.writable(tensor, reduce=_kind(reduce_op))
        op = _weft_op(reduce_op)
        return self._run("weft:all_reduce", opts, tensors, staging,
                         lambda a: g.all_reduce(buffer, op, a))

    def allreduce_coalesced(self, tensors, opts=None):
        opts = opts if opts is not None else _c10d.AllreduceCoalescedOptions()
        if not tensors:
            return _WeftWork(None, self, [])
        dtype = tensors[0].dtype
        if any(t.dtype != dtype for t in tensors):
            raise _weft.InvalidArgumentError("weft: allreduce_coalesced needs tensors of one dtype")
        for t in tensors:
            _check_writable(t)  # the results are copied back into them
        flat = _torch.cat([t.reshape(-1) for t in tensors])
        staging = _Staging()
        buffer = staging.writable(flat, reduce=_kind(opts.reduceOp))
        op = _weft_op(opts.reduceOp)
        g = self._weft

        class _Unpack:
            copies = ()

            @staticmethod
            def finish():
                offset = 0
                for t in tensors:
                    t.copy_(flat[offset:offset + t.numel()].view_as(t))
                    offset += t.numel()

        return self._run("weft:all_reduce", opts, tensors, _Unpack,
                         lambda a: g.all_reduce(buffer, op, async_op=a))

    def broadcast(self, tensors, opts=None):
        opts = opts if opts is not None else _c10d.BroadcastOptions()
        tensor = self._single(tensors, "broadcast")
        staging = _Staging()
        buffer = staging.writable(tensor)
        root = opts.rootRank
        g = self._weft
        return self._run("weft:broadcast", opts, tensors, staging,
                         lambda a: g.broadcast(buffer, root, async_op=a))

    def reduce(self, tensors, opts=None):
        opts = opts if opts is not None else _c10d.ReduceOptions()
        tensor = self._single(tensors, "reduce")
        staging = _Staging()
        buffer = staging.writable(tensor, reduce=_kind(opts.reduceOp))
        op, root = _weft_op(opts.reduceOp), opts.rootRank
        g = self._weft
        return self._run("weft:reduce", opts, tensors, staging,
                         lambda a: g.reduce(buffer, root, op, async_op=a))

    def allgather(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else _c10d.AllgatherOptions()
        outputs = self._single(output_tensors, "allgather")
        tensor = self._single(input_tensors, "allgather")
        staging = _Staging()
        source = staging.readable(tensor)
        targets = [staging.writable(t) for t in outputs]
        g = self._weft
        return self._run("weft:all_gather", opts, output_tensors, staging,
                         lambda a: g.all_gather(targets, source, async_op=a))

    def all_gather_single(self, output, input, opts=None):  # noqa: A002  (torch's names)
        opts = opts if opts is not None else _c10d.AllgatherOptions()
        staging = _Staging()
        source, target = staging.readable(input), staging.writable(output)
        g = self._weft
        return self._run("weft:all_gather", opts, [output], staging,
                         lambda a: g.all_gather_into_tensor(target, source, async_op=a))

    _allgather_base = all_gather_single

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        opts = opts if opts is not None else _c10d.AllgatherOptions()
        works = [self.all_gather_single(o, i, _async_options(_c10d.AllgatherOptions))
                 for o, i in zip(outputs, inputs)]
        return self._gathered(works, outputs, opts)

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def allgather_coalesced(self, output_lists, inputs, opts=None):
        opts = opts if opts is not None else _c10d.AllgatherOptions()
        # output_lists[rank][i] receives input i of that rank
        works = [self.allgather([[outs[i] for outs in output_lists]], [tensor],
                                _async_options(_c10d.AllgatherOptions))
                 for i, tensor in enumerate(inputs)]
        return self._gathered(works, [t for outs in output_lists for t in outs], opts)

    def gather(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else _c10d.GatherOptions()
        tensor = self._single(input_tensors, "gather")
        root = opts.rootRank
        outputs = output_tensors[0] if output_tensors else []
        staging = _Staging()
        source = staging.readable(tensor)
        targets = [staging.writable(t) for t in outputs] if self.rank() == root else None
        g = self._weft
        return self._run("weft:gather", opts, output_tensors, staging,
                         lambda a: g.gather(source, targets, root, async_op=a))

    def scatter(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else _c10d.ScatterOptions()
        tensor = self._single(output_tensors, "scatter")
        root = opts.rootRank
        inputs = input_tensors[0] if input_tensors else []
        staging = _Staging()
        target = staging.writable(tensor)
        sources = [staging.readable(t) for t in inputs] if self.rank() == root else None
        g = self._weft
        return self._run("weft:scatter", opts, output_tensors, staging,
                         lambda a: g.scatter(target, sources, root, async_op=a))

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else _c10d.ReduceScatterOptions()
        output = self._single(output_tensors, "reduce_scatter")
        inputs = self._single(input_tensors, "reduce_scatter")
        staging = _Staging()
        target = staging.writable(output, reduce=_kind(opts.reduceOp))
        sources = [staging.readable(t, reduce=_kind(opts.reduceOp)) for t in inputs]
        op = _weft_op(opts.reduceOp)
        g = self._weft
        return self._run("weft:reduce_scatter", opts, output_tensors, staging,
                         lambda a: g.reduce_scatter(target, sources, op, async_op=a))

    def reduce_scatter_single(self, output, input, opts=None):  # noqa: A002
        opts = opts if opts is not None else _c10d.ReduceScatterOptions()
        staging = _Staging()
        target = staging.writable(output, reduce=_kind(opts.reduceOp))
        source = staging.readable(input, reduce=_kind(opts.reduceOp))
        op = _weft_op(opts.reduceOp)
        g = self._weft
        return self._run("weft:reduce_scatter", opts, [output], staging,
                         lambda a: g.reduce_scatter_tensor(target, source, op, async_op=a))

    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        opts = opts if opts is not None else _c10d.ReduceScatterOptions()
        inner = _async_options(_c10d.ReduceScatterOptions)
        inner.reduceOp = opts.reduceOp
        works = [self.reduce_scatter_single(o, i, inner) for o, i in zip(outputs, inputs)]
        return self._gathered(works, outputs, opts)

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes,  # noqa: A002
                          opts=None):
        opts = opts if opts is not None else _c10d.AllToAllOptions()
        staging = _Staging()
        target, source = staging.writable(output), staging.readable(input)
        where = f"all_to_all_single on rank {self.rank()}"
        out_splits = _splits.element_splits(output_split_sizes, output, target.numel, self.size(),
                                            where, "output_split_sizes", _invalid_argument)
        in_splits = _splits.element_splits(input_split_sizes, input, source.numel, self.size(),
                                           where, "input_split_sizes", _invalid_argument)
        g = self._weft
        return self._run("weft:all_to_all", opts, [output], staging,
                         lambda a: g.all_to_all_single(target, source, out_splits, in_splits,
                                                       async_op=a))

    alltoall_base = all_to_all_single

    def alltoall(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else _c10d.AllToAllOptions()
        staging = _Staging()
        targets = [staging.writable(t) for t in output_tensors]
        sources = [staging.readable(t) for t in input_tensors]
        g = self._weft
        return self._run("weft:all_to_all", opts, output_tensors, staging,
                         lambda a: g.all_to_all(targets, sources, async_op=a))

    def barrier(self, opts=None):
        opts = opts if opts is not None else _c10d.BarrierOptions()
        g = self._weft
        return self._run("weft:barrier", opts, [], None, lambda a: g.barrier(async_op=a))

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        work = self._WeftWork_of(
            _profiled("weft:barrier", lambda a: self._weft.barrier(async_op=a), True), [])
        work.wait(timeout if timeout is not None else self._timeout)

    def _WeftWork_of(self, work, outputs):  # noqa: N802
        return _WeftWork(work, self, outputs)

    def _gathered(self, works, outputs, opts):
        """One Work over several started ones (the coalesced forms)."""
        work = _WorkList(works, self, outputs)
        if not getattr(opts, "asyncOp", _ASYNC):
            work.wait()
            return None
        return work

    # --- point to point -------------------------------------------------------------------
    def send(self, tensors, dst, tag=0):
        tensor = self._single(tensors, "send")
        staging = _Staging()
        source = staging.readable(tensor)
        work = _profiled("weft:send", lambda _: self._weft.isend(source, dst, tag), True)
        return _WeftWork(work, self, tensors)

    def recv(self, tensors, src, tag=0):
        tensor = self._single(tensors, "recv")
        staging = _Staging()
        target = staging.writable(tensor)
        title = "weft:recvAnySource" if src == _weft.ANY_SOURCE else "weft:recv"
        work = _profiled(title, lambda _: self._weft.irecv(target, src, tag), True)
        return _WeftWork(work, self, tensors, staging, source=True)

    def recv_anysource(self, tensors, tag=0):
        return self.recv(tensors, _weft.ANY_SOURCE, tag)

    recvAnysource = recv_anysource  # noqa: N815  (the C++ name)


class _ShutDown:
    """Stands for a weft group after shutdown(): every operation says so."""

    def __init__(self, name):
        self.name = name

    def abort(self, reason=""):
        pass

    def __getattr__(self, op):
        raise RuntimeError(f"weft: process group {self.name} was shut down (destroy_process_group)"
                           f"; {op} is not possible")


_live_groups = _weakref.WeakSet()


@_atexit.register
def _shut_down_at_exit():
    for group in list(_live_groups):
        group.shutdown()


class _WorkList(_WeftWork):
    """Several Works seen as one (the coalesced forms run one operation per tensor)."""

    def __init__(self, works, group, outputs):
        super().__init__(None, group, outputs)
        self._works = works

    def wait(self, timeout=None):
        for work in self._works:
            work.wait(timeout)
        return True

    def is_completed(self):
        return all(w.is_completed() for w in self._works)

    def is_success(self):
        return all(w.is_success() for w in self._works)

    def exception(self):
        for work in self._works:
            error = work.exception()
            if error is not None:
                return error
        return None

    def get_future(self):
        if self._future is None:
            # torch's C++ side (DDP's reducer) sees a Python set_exception as a result that holds
            # the exception, and takes it for the tensors: a future chained by then() instead
            # carries a real error when the callback raises.
            self._settled = _torch.futures.Future()
            self._future = self._settled.then(_value_or_raise)
            if self.is_completed():
                self._settle_future()
            else:
                self._group._completer().add(self)
        return self._future


def _async_options(options_class):
    opts = options_class()
    if hasattr(opts, "asyncOp"):
        opts.asyncOp = True
    return opts


def _invalid_argument(message):
    return _weft.InvalidArgumentError(f"weft: {message}")


def _check_writable(tensor):
    if not _storage.memory_is_writable(tensor):
        raise _invalid_argument(
            f"an output tensor (shape {tuple(tensor.shape)}, at {tensor.data_ptr():#x}) lies in "
            "read-only memory (a read-only mapping, such as torch.from_numpy(np.memmap(path, "
            "mode=\"r\"))), but receives the result: pass a writable copy (t.clone())")


def _create(backend_options, pg_options=None):
    """torch's creator (extended API): one weft group per torch group, over its store."""
    return WeftProcessGroup(
        backend_options.store, backend_options.group_rank, backend_options.group_size,
        backend_options.timeout, "torch-" + str(backend_options.group_id or "default"))


def register():
    _dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=["cpu"])
