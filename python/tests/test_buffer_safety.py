"""weft never reaches memory it must not (issue 25): all_to_all split sizes are checked before
they reach C++, results are never written into read-only memory, and a tensor resized or
re-pointed while an asynchronous operation uses it cannot free the memory under the operation.

Here through weft.distributed and weft._weft (numpy arrays and torch tensors, on whichever torch
runs the file); test_torch_backend.py checks the same through torch.distributed's "weft".
"""

import ctypes
import gc
import warnings

import numpy as np
import pytest
import torch

import weft
import weft.distributed as dist
from _ranks import run


# --- all_to_all split sizes -----------------------------------------------------------------

# Each case: (split sizes for a (4, 3) tensor on 2 ranks, text the error must show). Each sums to
# 4 rows (in Python, or in numpy's wrapping int64), so a check of the sum alone lets it through.
BAD_SPLITS = [
    ([-1, 5], "-1"),
    ([2**64, 4 - 2**64], str(2**64)),
    (np.array([2**63 - 1, -(2**63 - 1) + 4], dtype=np.int64), str(2**63 - 1)),
    ([5, -1], "5"),
    ([1.5, 2.5], "1.5"),
]


def _bad_split_sizes(rank, n):
    for kind in ("numpy", "torch"):
        tensor = (lambda: np.zeros((4, 3), np.float32)) if kind == "numpy" else \
            (lambda: torch.zeros(4, 3))
        for splits, shown in BAD_SPLITS:
            for side in ("input_split_sizes", "output_split_sizes"):
                with pytest.raises(ValueError) as info:
                    dist.all_to_all_single(tensor(), tensor(), **{side: splits})
                message = str(info.value)
                assert isinstance(info.value, weft.InvalidArgumentError), message
                for part in ("all_to_all_single", f"rank {rank}", side, shown, "4 rows",
                             "(4, 3)"):
                    assert part in message, (part, message)
    # The group is still usable: nothing was sent.
    out = np.zeros((4, 3), np.float32)
    dist.all_to_all_single(out, np.full((4, 3), rank, np.float32), [2, 2], [2, 2])
    assert (out == np.repeat([0.0, 1.0], 6).reshape(4, 3)).all()


def test_all_to_all_single_refuses_bad_split_sizes():
    run(_bad_split_sizes, 2)


def _binding_split_sizes(rank, n):
    pg = dist.group.WORLD._pg
    out, inp = np.zeros(12, np.float32), np.zeros(12, np.float32)
    for splits, shown in ([-3, 15], "-3"), ([2**64 + 1, 1], str(2**64 + 1)), \
            ([2**63, 2**63 + 12], str(2**63)), ([13, 0], "13"), ([6, 6, 0], "3 split sizes"):
        with pytest.raises(weft.InvalidArgumentError) as info:
            pg.all_to_all_single(out, inp, splits, [6, 6])
        message = str(info.value)
        for part in ("all_to_all_single", f"rank {rank}", "output_split_sizes", shown, "12"):
            assert part in message, (part, message)
    dist.barrier()  # rank 0 hosts the store: it must not leave while rank 1 still joins


def test_binding_checks_split_sizes_without_overflow():
    """weft._weft's all_to_all_single, which weft._torch2 calls directly, checks element counts
    itself: in range, one per rank, and a sum that cannot wrap."""
    run(_binding_split_sizes, 2)


# --- read-only memory -----------------------------------------------------------------------

def _read_only_tensor(path, shape=(64,)):
    """A torch tensor over a read-only file mapping (writing into it raises SIGSEGV)."""
    np.zeros(shape, np.float32).tofile(path)
    array = np.memmap(path, dtype=np.float32, mode="r", shape=shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that the array is not writable
        return torch.from_numpy(array)


def test_tensor_over_read_only_memory_is_refused(tmp_path):
    t = _read_only_tensor(tmp_path / "ro.bin")
    with pytest.raises(weft.InvalidArgumentError, match="read-only memory"):
        weft.buffer_info(t, writable=True)
    with pytest.raises(weft.InvalidArgumentError, match="read-only memory"):
        weft.buffer_info(t[1:5], writable=True)  # a view inside the mapping
    assert weft.buffer_info(t)[:2] == ("float32", 64)  # reading it is fine


def test_numpy_read_only_arrays_are_refused(tmp_path):
    a = np.zeros(8, np.float32)
    a.flags.writeable = False
    np.zeros(8, np.float32).tofile(tmp_path / "ro.bin")
    mapped = np.memmap(tmp_path / "ro.bin", dtype=np.float32, mode="r")
    for array in (a, mapped, np.frombuffer(b"12345678", np.uint8)):
        with pytest.raises(weft.InvalidArgumentError, match="read-only"):
            weft.buffer_info(array, writable=True)


def _read_only_outputs(rank, n, directory):
    t = _read_only_tensor(f"{directory}/ro{rank}.bin", (8, 8))
    source = torch.ones(8, 8)
    calls = [
        ("all_reduce", lambda: dist.all_reduce(t)),
        ("broadcast", lambda: dist.broadcast(t, src=0)),
        ("all_reduce async", lambda: dist.all_reduce(t, async_op=True)),
        ("all_gather", lambda: dist.all_gather([t[:4], t[4:]], source[:4])),
        ("all_gather_into_tensor", lambda: dist.all_gather_into_tensor(t, source[:4])),
        ("reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(t[:4], source)),
        ("all_to_all_single", lambda: dist.all_to_all_single(t, source)),
        ("irecv", lambda: dist.irecv(t, src=1 - rank)),
        # Coalesced forms copy results back with torch: into a non-contiguous tensor too.
        ("all_reduce_coalesced", lambda: dist.all_reduce_coalesced([t[:, 0], t[:, 1]])),
    ]
    for name, call in calls:
        with pytest.raises(ValueError, match="read-only memory") as info:
            call()
        assert isinstance(info.value, weft.InvalidArgumentError), name
    assert float(t.sum()) == 0.0
    # Nothing reached the peer: the group still works.
    ok = torch.full((4,), float(rank))
    dist.all_reduce(ok)
    assert torch.equal(ok, torch.full((4,), 1.0))


def test_operations_refuse_outputs_in_read_only_memory(tmp_path):
    run(_read_only_outputs, 2, str(tmp_path))


# --- tensors resized or re-pointed during an asynchronous operation -------------------------

ROUNDS = 40


def _resize_during_async_ops(rank, n):
    total = float(sum(range(n)))
    for i in range(ROUNDS):
        t = torch.full((1024,), float(rank))
        work = dist.all_reduce(t, async_op=True)
        address = t.data_ptr()
        # Growing the tensor would move it (torch frees the old memory): refused while weft
        # may still write there, whether or not the operation has in fact finished. torch has
        # set the new shape when it raises (as for any non-resizable tensor): set it back.
        with pytest.raises(RuntimeError, match="not resizable"):
            t.resize_(1 << 18)
        t.resize_(1024)
        storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t._storage()
        with pytest.raises(RuntimeError, match="not resizable"):
            storage.resize_(0)  # freeing the storage outright (as FSDP does)
        assert t.data_ptr() == address
        work.wait()
        assert torch.equal(t, torch.full((1024,), total)), i
        t.resize_(1 << 18)  # the operation is over: the tensor is the user's again
        assert t.numel() == 1 << 18


def test_resizing_a_tensor_during_an_async_op_is_refused():
    run(_resize_during_async_ops, 2)


def _overlapping_async_ops(rank, n):
    for _ in range(ROUNDS):
        t = torch.ones(256)
        first = dist.all_reduce(t, async_op=True)
        second = dist.all_reduce(t[128:], async_op=True)  # a view: the same storage
        first.wait()
        with pytest.raises(RuntimeError, match="not resizable"):
            t.resize_(1 << 16)  # the second operation still pins the storage
        t.resize_(256)
        second.wait()
        assert torch.equal(t[:128], torch.full((128,), 2.0))
        assert torch.equal(t[128:], torch.full((128,), 4.0))
        t.resize_(1 << 16)


def test_pins_of_one_storage_nest():
    run(_overlapping_async_ops, 2)


def _repoint_during_irecv(rank, n):
    go = torch.zeros(1)
    for i in range(ROUNDS):
        value = float(i + 7)
        if rank == 0:
            dist.recv(go, src=1, tag=2)
            dist.send(torch.full((1024,), value), dst=1, tag=1)
            continue
        t = torch.zeros(1024)
        address = t.data_ptr()
        work = dist.irecv(t, src=0, tag=1)
        # After set_ (or del t) only the operation references the memory it receives into.
        t.set_(torch.zeros(3))
        gc.collect()
        decoys = [torch.full((1024,), -1.0) for _ in range(32)]  # would reuse freed memory
        dist.send(go, dst=0, tag=2)
        work.wait()
        for d in decoys:
            assert bool((d == -1.0).all()), f"round {i}: the receive wrote into another tensor"
        # The data landed in the memory the operation kept (alive while its Work is).
        landed = np.ctypeslib.as_array((ctypes.c_float * 1024).from_address(address))
        assert (landed == value).all(), i
        del work


def test_repointing_a_tensor_during_irecv_keeps_its_memory():
    run(_repoint_during_irecv, 2)


def _drop_tensor_during_isend(rank, n):
    go = torch.zeros(1)
    for i in range(ROUNDS):
        if rank == 0:
            t = torch.full((4096,), float(i))
            dist.isend(t, dst=1, tag=1)  # Work and tensor dropped at once
            del t
            gc.collect()
            decoys = [torch.full((4096,), -1.0) for _ in range(16)]
            dist.send(go, dst=1, tag=2)
            assert all(bool((d == -1.0).all()) for d in decoys)
        else:
            dist.recv(go, src=0, tag=2)
            got = torch.zeros(4096)
            dist.recv(got, src=0, tag=1)
            assert torch.equal(got, torch.full((4096,), float(i))), i


def test_dropping_tensor_and_work_during_isend():
    run(_drop_tensor_during_isend, 2)
