"""Keeping a torch tensor's memory in place while an operation that outlives the call uses it,
and telling whether an array's memory can be written. Used by the extension (buffers.h calls
pin()) and by the Python modules that write results into tensors themselves.

Why a pin and not only a reference: torch grows a tensor (t.resize_ to more elements) or a
storage (storage.resize_(n), FSDP frees parameters with resize_(0)) by reallocating inside its
storage (c10::StorageImpl): it allocates new memory, copies and frees the old memory, however
many references the storage has. Holding the storage keeps t.set_(...) or del t from freeing
the memory, not a resize. So for the operation's lifetime the storage is also made
non-resizable: a resize then fails at once with torch's own RuntimeError ("Trying to resize
storage that is not resizable") instead of freeing memory weft still reads or writes.

How, by torch version:
  * torch 2.x (UntypedStorage._swap_data_ptr_, c10::StorageImpl::swap_data_ptr: swaps data,
    size, allocator and the resizable flag together): the storage trades places with a
    non-resizable alias over the same bytes (torch.frombuffer of a ctypes view, owning
    nothing). The address and the bytes do not change, only resizability. At release the
    storage gets its own back, unless its memory was replaced meanwhile (then the alias frees
    the old memory when dropped).
  * torch 1.x: weft._weft_torch (the compiled backend) clears and restores the StorageImpl's
    resizable flag (c10::StorageImpl::set_resizable), counting pins per storage as the
    backend's own operations do.
  * otherwise (a torch 2.x without the swap, torch 1.x built without weft._weft_torch): the
    storage is only held.
A storage that is already non-resizable (torch.from_numpy, torch.frombuffer) is only held.
Pins nest: pending operations on one storage each hold one; the last release restores it.
Everything here runs with the GIL held.
"""

import ctypes
import sys

from . import _weft


class _Held:
    """A pin that only holds the storage (nothing to restore)."""

    __slots__ = ("storage",)

    def __init__(self, storage):
        self.storage = storage

    def release(self):
        pass


# Aliases not in use, by (address, bytes), oldest first. An alias is only a non-owning,
# non-resizable view of a range of addresses, so it serves any later pin of the same range:
# making one (torch.frombuffer) is most of a pin's cost, and programs reuse their tensors.
_spare_aliases = {}
_SPARE_ALIASES = 64


def _alias(torch, address, nbytes):
    alias = _spare_aliases.pop((address, nbytes), None)
    if alias is None:
        view = (ctypes.c_char * nbytes).from_address(address)
        alias = torch.frombuffer(view, dtype=torch.uint8).untyped_storage()
    return alias


class _Swapped:
    """One storage swapped with its non-resizable alias, and how many pins share the swap."""

    __slots__ = ("storage", "alias", "address", "nbytes", "count")

    def __init__(self, torch, storage):
        self.storage = storage
        self.address, self.nbytes = storage.data_ptr(), storage.nbytes()
        self.alias = _alias(torch, self.address, self.nbytes)
        storage._swap_data_ptr_(self.alias)  # the storage now holds the alias's view
        self.count = 0

    def restore(self):
        alias, self.alias = self.alias, None
        if self.storage.data_ptr() != self.address or self.storage.resizable():
            return  # its memory was replaced meanwhile: the alias frees the old one when dropped
        self.storage._swap_data_ptr_(alias)  # the alias holds its view again: reusable
        if len(_spare_aliases) >= _SPARE_ALIASES:
            del _spare_aliases[next(iter(_spare_aliases))]
        _spare_aliases[(self.address, self.nbytes)] = alias


_swapped = {}  # StorageImpl address -> _Swapped, while pinned


class _SwapPin:
    """One operation's pin of a swapped storage; the storage stays held while this lives."""

    __slots__ = ("storage", "_key")

    def __init__(self, storage, key):
        self.storage = storage
        self._key = key

    def release(self):
        key, self._key = self._key, None
        if key is None:
            return
        entry = _swapped[key]
        entry.count -= 1
        if entry.count == 0:
            del _swapped[key]
            entry.restore()

    def __del__(self):
        self.release()


def _pin_by_swap(torch, tensor):
    storage = tensor.untyped_storage()
    key = storage._cdata
    entry = _swapped.get(key)
    if entry is None:
        if not storage.resizable() or storage.nbytes() == 0:
            return _Held(storage)
        entry = _swapped[key] = _Swapped(torch, storage)
    entry.count += 1
    return _SwapPin(entry.storage, key)


def _pin_natively(torch, tensor):
    from . import _weft_torch
    return _weft_torch._pin_storage(tensor)


def _hold_only(torch, tensor):
    storage = tensor.untyped_storage() if hasattr(tensor, "untyped_storage") else tensor._storage()
    return _Held(storage)


_pin_strategy = None


def _choose_strategy(torch):
    if hasattr(getattr(torch, "UntypedStorage", None), "_swap_data_ptr_") and \
            hasattr(torch.Tensor, "untyped_storage"):
        return _pin_by_swap
    if torch.__version__.split(".")[0] == "1":
        try:
            from . import _weft_torch
        except ImportError:
            return _hold_only
        if hasattr(_weft_torch, "_pin_storage"):
            return _pin_natively
    return _hold_only


def pin(tensor):
    """Holds tensor's storage and pins it against reallocation; returns the pin, whose
    release() ends the pinning (idempotent; the storage stays held while the pin lives)."""
    global _pin_strategy
    torch = sys.modules["torch"]
    if _pin_strategy is None:
        _pin_strategy = _choose_strategy(torch)
    return _pin_strategy(torch, tensor)


def memory_is_writable(array):
    """False when this process cannot write the memory of array (a torch tensor or a numpy
    array, of any strides): a read-only mapping. See python/src/writable_memory.h."""
    if type(array).__module__.split(".")[0] == "torch":
        count, address = array.numel(), array.data_ptr()
        item, strides = array.element_size(), [s * array.element_size() for s in array.stride()]
    else:
        count, address = int(array.size), array.__array_interface__["data"][0]
        item, strides = array.itemsize, array.strides
    if count == 0:
        return True
    low = high = 0
    for size, stride in zip(array.shape, strides):
        reach = (size - 1) * stride
        low, high = (low + reach, high) if reach < 0 else (low, high + reach)
    return _weft._memory_writable(address + low, high - low + item)
