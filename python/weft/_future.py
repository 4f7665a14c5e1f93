"""weft.distributed's Future: torch.futures.Future's methods over a weft operation, no torch needed.

Work.get_future() and the async forms of all_reduce_coalesced and all_gather_coalesced return
one. Its value is the operation's output tensors (a list, as torch's CPU backends give), or
what a then() callback returned.

Completion: a future of an operation completes when someone observes the operation finished
(wait(), done(), value(), the Work's wait() or is_completed()), or, once a callback was added
with then() or add_done_callback(), on a watcher thread that waits for the operation, so that
callbacks run even when nobody waits. wait() on the calling thread stays interruptible with
Ctrl-C as every weft wait. Callbacks run exactly once, on the thread that completes the future
(inline when it has already completed), as torch's.
"""

import threading


class Future:
    """torch.futures.Future's interface: wait(), value(), done(), then(callback),
    add_done_callback(callback), set_result(result), set_exception(error)."""

    def __init__(self, _wait=None, _completed=None):
        # _wait() waits for the operation, raises its error or returns the value; _completed()
        # says whether it has finished. None for a future completed by set_result (or by its
        # parent's callback, for then()).
        self._source = _wait
        self._completed = _completed
        self._parent = None
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._value = None
        self._error = None
        self._callbacks = []
        self._watcher = None

    # --- torch.futures.Future ----------------------------------------------------------------

    def done(self):
        """True once the future has a value or an error."""
        if self._event.is_set():
            return True
        if self._completed is not None and self._completed():
            self._settle()
            return True
        return False

    def wait(self):
        """Blocks until completed; returns the value or raises the error."""
        if not self._event.is_set():
            if self._source is not None:
                self._settle()
            elif self._parent is not None:
                try:
                    self._parent.wait()
                except BaseException as error:  # noqa: BLE001
                    if isinstance(error, KeyboardInterrupt):
                        raise
            self._event.wait()
        return self.value()

    def value(self):
        """The value of a completed future (raises its error); call it after wait() or in a
        callback."""
        if not self.done():
            raise RuntimeError("Cannot retrieve value on a Future that has not completed. "
                               "Call wait() first.")
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback):
        """A new Future holding callback(self)'s result (or its exception), run when this one
        completes."""
        child = Future()
        child._parent = self

        def run(fut):
            try:
                result = callback(fut)
            except BaseException as error:  # noqa: BLE001  (the child future carries it)
                child.set_exception(error)
            else:
                child.set_result(result)

        self.add_done_callback(run)
        return child

    def add_done_callback(self, callback):
        """Runs callback(self) when this future completes (now if it has)."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                self._watch()
                return
        callback(self)

    def set_result(self, result):
        if not self._complete(result, None):
            raise RuntimeError("Future can only be marked completed once.")

    def set_exception(self, result):
        if not isinstance(result, BaseException):
            result = RuntimeError(str(result))
        if not self._complete(None, result):
            raise RuntimeError("Future can only be marked completed once.")

    # --- weft ----------------------------------------------------------------------------

    def _settle(self):
        """Waits for the source operation and completes the future with its outcome."""
        try:
            value = self._source()
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # noqa: BLE001  (the future carries every failure)
            self._complete(None, error)
        else:
            self._complete(value, None)

    def _complete(self, value, error):
        with self._lock:
            if self._event.is_set():
                return False
            self._value, self._error = value, error
            callbacks, self._callbacks = self._callbacks, []
            self._event.set()
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # noqa: BLE001  (as torch: a failing callback does not stop others)
                import traceback
                traceback.print_exc()
        return True

    def _watch(self):
        # Called with the lock held. A future of an operation gets a watcher thread so that
        # callbacks run without a wait; a then() future completes from its parent's callback.
        if self._source is None or self._watcher is not None:
            return
        self._watcher = threading.Thread(target=self._watch_run, name="weft-future",
                                         daemon=True)
        self._watcher.start()

    def _watch_run(self):
        try:
            self._settle()
        except BaseException:  # noqa: BLE001  (nothing to report to on this thread)
            pass

    def __repr__(self):
        state = "completed" if self._event.is_set() else "pending"
        return f"<weft.distributed.Future {state}>"
