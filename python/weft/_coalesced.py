"""torch.distributed's all_reduce_coalesced and all_gather_coalesced on weft.

Coalesced means one collective for a list of tensors: the tensors (all of one dtype) are copied
into one flat buffer, weft runs one all_reduce or one (uneven) all_gather on it, and the result
is copied back into the caller's tensors once the operation has finished (at wait(), or when the
future completes). A single contiguous tensor is used in place, without a copy. As in torch, the
async forms return a Future (weft.distributed.Future) whose value is the output tensors.

Unlike torch's gloo, shapes may differ by rank in all_gather_coalesced: output_tensor_lists[r]
must match rank r's input_tensor_list in total size and dtype.
"""

import numpy as np

from . import _storage
from ._weft import ReduceOp


def _dist():
    from . import distributed
    return distributed


def _is_torch(t):
    return type(t).__module__.split(".")[0] == "torch"


def _invalid(message, op):
    dist = _dist()
    return dist._error(dist._weft.InvalidArgumentError, message, op=op)


def _array(t, what, writable, op):
    """t as a torch tensor or numpy array (a view of other buffer objects)."""
    if _is_torch(t):
        if getattr(t, "device", None) is not None and t.device.type != "cpu":
            raise _invalid(f"{what} is on {t.device}: weft takes CPU tensors", op)
        array = t
    else:
        array = t if isinstance(t, np.ndarray) else None
        if array is None:
            try:
                array = np.asarray(memoryview(t))
            except TypeError:
                raise TypeError(f"{what} must be a numpy array, a torch tensor or a buffer, "
                                f"not {type(t).__name__}") from None
        if writable and not array.flags.writeable:
            raise _invalid(f"{what} is read-only but receives the result", op)
    return array


def _check_copy_targets(arrays, what, op):
    """Outputs that torch or numpy copy results into (weft checks the buffers it writes
    itself): refused when in read-only memory, which would kill the process."""
    for i, a in enumerate(arrays):
        if not _storage.memory_is_writable(a):
            raise _invalid(f"{what}[{i}] lies in read-only memory (a read-only mapping, such as "
                           f"np.memmap(path, mode=\"r\")) but receives the result: pass a "
                           f"writable copy", op)


def _numel(a):
    return a.numel() if _is_torch(a) else int(a.size)


def _contiguous(a):
    return a.is_contiguous() if _is_torch(a) else bool(a.flags.c_contiguous)


def _check_same_kind(arrays, what, op):
    kinds = {_is_torch(a) for a in arrays}
    if len(kinds) > 1:
        raise _invalid(f"{what} mixes torch tensors and numpy arrays", op)
    dtypes = {str(a.dtype) for a in arrays}
    if len(dtypes) > 1:
        raise _invalid(f"{what} mixes dtypes {sorted(dtypes)}: coalesced collectives take one "
                       f"dtype", op)


def _flat(arrays):
    """(buffer weft works on, whether results must be copied back)."""
    if len(arrays) == 1 and _contiguous(arrays[0]):
        return arrays[0], False
    if _is_torch(arrays[0]):
        import torch
        return torch.cat([a.reshape(-1) for a in arrays]), True
    return np.concatenate([a.reshape(-1) for a in arrays]), True


def _empty_like(prototype, count):
    if _is_torch(prototype):
        import torch
        return torch.empty(count, dtype=prototype.dtype)
    return np.empty(count, dtype=prototype.dtype)


def _unflatten(flat, arrays):
    offset = 0
    for a in arrays:
        n = _numel(a)
        chunk = flat[offset:offset + n]
        if _is_torch(a):
            a.copy_(chunk.view(a.shape))
        else:
            np.copyto(a, chunk.reshape(a.shape))
        offset += n


def _finish(work, async_op):
    if async_op:
        return work.get_future()
    work.wait()
    return None


def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    """all_reduce of every tensor in tensors (one dtype), in one collective."""
    dist = _dist()
    op_name = "all_reduce_coalesced"
    if _is_torch(tensors) or isinstance(tensors, np.ndarray):
        tensors = [tensors]
    tensors = list(tensors)
    g = dist._resolve(group)
    if g is None:
        return None
    if not tensors:
        raise _invalid("tensors is empty", op_name)
    arrays = [_array(t, f"tensors[{i}]", True, op_name) for i, t in enumerate(tensors)]
    _check_same_kind(arrays, "tensors", op_name)
    flat, copy_back = _flat(arrays)
    if copy_back:
        _check_copy_targets(arrays, "tensors", op_name)
    work = g._pg.all_reduce(flat, dist._reduce_op(op), True)
    return _finish(dist.Work(work, g, tensors,
                             (lambda: _unflatten(flat, arrays)) if copy_back else None), async_op)


def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None,  # noqa: A002
                         async_op=False):
    """output_tensor_lists[r][i] receives rank r's input_tensor_list[i], in one collective."""
    dist = _dist()
    op_name = "all_gather_coalesced"
    g = dist._resolve(group)
    if g is None:
        return None
    if not isinstance(output_tensor_lists, (list, tuple)):
        raise TypeError("Invalid function argument: output_tensor_lists should be a list")
    n = g.size()
    if len(output_tensor_lists) != n:
        raise _invalid(f"output_tensor_lists has {len(output_tensor_lists)} lists for a group of "
                       f"{n} ranks", op_name)
    inputs = [_array(t, f"input_tensor_list[{i}]", False, op_name)
              for i, t in enumerate(input_tensor_list)]
    if not inputs:
        raise _invalid("input_tensor_list is empty", op_name)
    outputs = [[_array(t, f"output_tensor_lists[{r}][{i}]", True, op_name)
                for i, t in enumerate(tensors)] for r, tensors in enumerate(output_tensor_lists)]
    _check_same_kind(inputs + [a for tensors in outputs for a in tensors],
                     "input_tensor_list and output_tensor_lists", op_name)
    flat_in, _ = _flat(inputs)
    flat_outs, staged = [], []
    for r, tensors in enumerate(outputs):
        if len(tensors) == 1 and _contiguous(tensors[0]):
            flat_outs.append(tensors[0])
        else:
            _check_copy_targets(tensors, f"output_tensor_lists[{r}]", op_name)
            flat = _empty_like(inputs[0], sum(_numel(a) for a in tensors))
            flat_outs.append(flat)
            staged.append((flat, tensors))

    def copy_back():
        for flat, tensors in staged:
            _unflatten(flat, tensors)

    work = g._pg.all_gather(flat_outs, flat_in, True)
    result = [list(tensors) for tensors in output_tensor_lists]
    return _finish(dist.Work(work, g, result, copy_back if staged else None), async_op)
