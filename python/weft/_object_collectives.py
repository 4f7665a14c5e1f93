"""torch.distributed's object collectives on weft: any picklable Python object.

Each object is pickled into a uint8 array. The sizes travel first (one int64 per object), so
every receiver allocates exactly; the bytes then travel in one collective: uneven for
all_gather (no padding), padded to the largest object for gather and scatter. Unpickling runs arbitrary code: use with trusted peers only,
as in torch.
"""

import pickle

import numpy as np


def _dist():
    from . import distributed
    return distributed


def _to_bytes(obj):
    return np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)


def _from_bytes(array):
    return pickle.loads(array.tobytes())


def _check_list_length(object_list, n, name):
    if len(object_list) != n:
        raise ValueError(f"{name} must have one entry per rank of the group ({n}), "
                         f"has {len(object_list)}")


def all_gather_object(object_list, obj, group=None):  # noqa: A002  (torch's name)
    """object_list[r] becomes rank r's obj on every rank."""
    dist = _dist()
    g = dist._resolve(group)
    if g is None:
        return
    n = g.size()
    _check_list_length(object_list, n, "object_list")
    data = _to_bytes(obj)
    sizes = np.zeros(n, dtype=np.int64)
    g._pg.all_gather_into_tensor(sizes, np.array([data.size], dtype=np.int64))
    received = [np.empty(int(s), dtype=np.uint8) for s in sizes]
    g._pg.all_gather(received, data)
    for r in range(n):
        object_list[r] = _from_bytes(received[r])


def gather_object(obj, object_gather_list=None, dst=0, group=None):  # noqa: A002
    """On dst, object_gather_list[r] becomes rank r's obj; other ranks pass None."""
    dist = _dist()
    g = dist._resolve(group)
    if g is None:
        return
    n, root = g.size(), dist._group_rank(g, dst, "dst")
    is_root = g.rank() == root
    if is_root:
        if object_gather_list is None:
            raise ValueError("Argument ``object_gather_list`` must be specified on destination rank.")
        _check_list_length(object_gather_list, n, "object_gather_list")
    data = _to_bytes(obj)
    sizes = np.zeros(n, dtype=np.int64)
    g._pg.all_gather_into_tensor(sizes, np.array([data.size], dtype=np.int64))
    # NOTE(uneven-gather): weft's gather takes equal sizes today, so pad to the largest.
    longest = int(sizes.max())
    padded = np.zeros(longest, dtype=np.uint8)
    padded[:data.size] = data
    received = [np.empty(longest, dtype=np.uint8) for _ in range(n)] if is_root else None
    g._pg.gather(padded, received, root)
    if is_root:
        for r in range(n):
            object_gather_list[r] = _from_bytes(received[r][:int(sizes[r])])


def broadcast_object_list(object_list, src=0, group=None, device=None):  # noqa: A002
    """Every rank's object_list (of the same length) becomes src's, element by element."""
    dist = _dist()
    g = dist._resolve(group)
    if g is None:
        return
    root = dist._group_rank(g, src, "src")
    count = len(object_list)
    if g.rank() == root:
        pieces = [_to_bytes(o) for o in object_list]
        sizes = np.array([p.size for p in pieces], dtype=np.int64)
    else:
        sizes = np.zeros(count, dtype=np.int64)
    g._pg.broadcast(sizes, root)
    if g.rank() == root:
        data = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.uint8)
    else:
        data = np.empty(int(sizes.sum()), dtype=np.uint8)
    g._pg.broadcast(data, root)
    if g.rank() != root:
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        for i in range(count):
            object_list[i] = _from_bytes(data[offsets[i]:offsets[i + 1]])


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=0,
                        group=None):  # noqa: A002
    """scatter_object_output_list[0] becomes src's scatter_object_input_list[my rank]."""
    dist = _dist()
    g = dist._resolve(group)
    if g is None:
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    n, root = g.size(), dist._group_rank(g, src, "src")
    is_root = g.rank() == root
    if is_root:
        if scatter_object_input_list is None:
            raise ValueError("scatter_object_input_list must be given on the source rank")
        _check_list_length(scatter_object_input_list, n, "scatter_object_input_list")
        pieces = [_to_bytes(o) for o in scatter_object_input_list]
    # Sizes first: each rank learns its own and the largest. NOTE(uneven-scatter): weft's
    # scatter takes equal sizes today, so the pieces are padded to the largest.
    my_size = np.zeros(2, dtype=np.int64)
    if is_root:
        longest = max(p.size for p in pieces)
        sizes = [np.array([p.size, longest], dtype=np.int64) for p in pieces]
        padded = []
        for p in pieces:
            q = np.zeros(longest, dtype=np.uint8)
            q[:p.size] = p
            padded.append(q)
    g._pg.scatter(my_size, sizes if is_root else None, root)
    data = np.empty(int(my_size[1]), dtype=np.uint8)
    g._pg.scatter(data, padded if is_root else None, root)
    scatter_object_output_list[0] = _from_bytes(data[:int(my_size[0])])
