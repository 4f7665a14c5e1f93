"""all_to_all_single's split sizes, checked before anything reaches C++ (weft.distributed and
the torch 2.x backend).

torch's split sizes count rows (slices along dim 0) per peer; weft counts elements. A list
is refused unless it holds one integer per rank, each in [0, rows], summing to the tensor's
rows. The check runs on Python integers, which cannot overflow: numpy's or torch's int64
arithmetic would wrap around, so two huge sizes (or a negative one) could add up to the right
total and reach the binding as element counts far outside the tensor.
"""

import operator


def element_splits(split_sizes, tensor, elements, group_size, where, what, invalid):
    """Element counts per peer for split_sizes (rows per peer), or [] (equal blocks) when
    split_sizes is None or empty.

    tensor: the array or tensor split (rows = shape[0], 1 for a 0-d tensor); elements(): its
    element count as weft sees it (a byte view counts bytes), asked only when sizes are given;
    where: "<op> on rank <r>"; what: the argument's name ("input_split_sizes");
    invalid(message): the exception to raise."""
    if split_sizes is None:
        return []
    try:
        sizes = list(split_sizes)
    except TypeError:
        raise invalid(f"{where}: {what} must be a list of integers, not "
                      f"{type(split_sizes).__name__}") from None
    if not sizes:
        return []
    shape = tuple(int(d) for d in tensor.shape)
    rows = shape[0] if shape else 1
    tensor = f"the tensor has {rows} rows (dim 0), shape {shape}"
    if len(sizes) != group_size:
        raise invalid(f"{where}: {what} holds {len(sizes)} split sizes for a group of "
                      f"{group_size} ranks (one per rank); {tensor}")
    checked = []
    for i, size in enumerate(sizes):
        try:
            rows_i = operator.index(size)
        except TypeError:
            raise invalid(f"{where}: {what}[{i}] is {size!r}, not an integer; {tensor}") from None
        if rows_i < 0:
            raise invalid(f"{where}: {what}[{i}] is {rows_i}, a negative split size; {tensor}")
        if rows_i > rows:
            raise invalid(f"{where}: {what}[{i}] is {rows_i}, more than the tensor's rows; "
                          f"{tensor}")
        checked.append(rows_i)
    total = sum(checked)
    if total != rows:
        raise invalid(f"{where}: {what} sums to {total} rows, but {tensor}")
    per_row = elements() // rows if rows else 0
    return [r * per_row for r in checked]


def equal_blocks(elements, group_size, where, what, invalid):
    """group_size equal element counts for a side given no split sizes while the other side
    has some."""
    if elements % group_size:
        raise invalid(f"{where}: {what} is not given, so the tensor's {elements} elements are "
                      f"split into {group_size} equal blocks, which they do not divide into")
    return [elements // group_size] * group_size
