#!/usr/bin/env python3
"""shm_compare_table.py OUT -- COMPARE.md of a bench/shm_compare.sh run (stdlib only).

Per op and rank count: each system's median over runs of med_us (the median timed batch) and
busbw (nccl-tests factors) at 8 B, 64 KiB, 1 MiB, 16 MiB and 64 MiB, the ratio of Open MPI's
time to weft's (> 1: weft faster) and gloo's time to weft's, and whether issue 5's target for
that cell is met. Then the memory-bandwidth bound of shared/anchors/membw.c and how close weft's
64 MiB all_reduce comes to it. Last, where the small and mode rounds carry a vCPU mode (a
.mode file beside the CSV, bench/shm_compare.sh -m), weft beside Open MPI within each mode.
"""
import csv, glob, os, statistics, sys

out = sys.argv[1]
SIZES = [8, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
OPS = ["allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "alltoall", "barrier"]
SYSTEMS = [("weft", "weft shm"), ("openmpi", "Open MPI"), ("mpich", "MPICH"), ("torch", "gloo")]


def system_of(row):
    for key, _ in SYSTEMS:
        if row["system"].startswith(key):
            return key
    return None


def samples(path):
    """(op, ranks, system, bytes, med_us) of every good row of one CSV of the anchors' schema."""
    with open(path) as f:
        if not f.readline().startswith("system,config"):
            return
        f.seek(0)
        for r in csv.DictReader(f):
            s = system_of(r)
            if s is None or r["op"] not in OPS or r["check"] in ("FAIL", "unsupported"):
                continue
            if r["med_us"]:
                yield r["op"], int(r["ranks"]), s, int(r["bytes"]), float(r["med_us"])


def mode_of(path):
    """'fast', 'slow' or 'mixed' from the .mode file beside a CSV; None without one."""
    tag = path[:-len(".csv")] + ".mode"
    return open(tag).read().strip() if os.path.exists(tag) else None


rows = {}  # (op, ranks, system) -> bytes -> [med_us over runs and small rounds]
small = glob.glob(os.path.join(out, "small", "*.csv"))  # 8 and 16 B only
for path in glob.glob(os.path.join(out, "run*", "*.csv")) + small:
    for op, n, s, b, us in samples(path):
        rows.setdefault((op, n, s), {}).setdefault(b, []).append(us)

by_mode = {}  # mode -> (op, ranks, system) -> bytes -> [med_us of the rounds in that mode]
mode_counts = {}  # mode -> rounds
tagged = small + glob.glob(os.path.join(out, "bymode", "*.csv"))
for path in tagged:
    mode = mode_of(path)
    if mode is None:
        continue
    mode_counts[mode] = mode_counts.get(mode, 0) + 1
    for op, n, s, b, us in samples(path):
        by_mode.setdefault(mode, {}).setdefault((op, n, s), {}).setdefault(b, []).append(us)


def nearest_size(by, op, size):
    """The row of `by` (bytes -> values) that stands for `size`, or None."""
    if op == "barrier":
        return min(by)
    cands = [b for b in by if b >= size]
    if not cands or min(cands) > 2 * size:  # the anchors' block ops round 8 B up to n x 4 B
        return None
    return min(cands)


def cell(op, n, s, size):
    by = rows.get((op, n, s))
    b = nearest_size(by, op, size) if by else None
    if b is None:
        return None
    us = statistics.median(by[b])
    factor = {"allreduce": 2 * (n - 1) / n, "broadcast": 1.0, "reduce": 1.0, "barrier": 0.0}.get(
        op, (n - 1) / n)
    return us, b / us / 1e3 * factor


def fmt_us(us):
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} us" if us >= 10 else f"{us:.2f} us"


def target_met(op, n, size, weft, ompi):
    """issue 5's targets as a ratio of Open MPI's time to weft's."""
    if weft is None or ompi is None:
        return "-"
    speedup = ompi[0] / weft[0]
    need = 1.0
    if op == "allreduce" and n == 2 and size == 64 << 20:
        need = 2.0
    if op != "allreduce" and size not in (8, 64 << 10, 16 << 20) and op != "barrier":
        return f"{speedup:.2f}x"
    return f"{speedup:.2f}x {'met' if speedup >= need else 'MISSED'}"


ranks = sorted({k[1] for k in rows})
print(f"# weft on one host (shared memory) beside Open MPI, MPICH and gloo -- {os.path.basename(out)}\n")
nruns = len(glob.glob(os.path.join(out, "run*")))
print(f"{nruns} run(s), float32 (sum for reductions). Cells: median over runs of the median timed "
      "batch; busbw in GB/s. 'OMPI/weft' = Open MPI's time / weft's (> 1: weft faster), read "
      "against issue 5's target (2x for 64 MiB 2-rank all_reduce, 1x elsewhere).")
if small:
    rounds = len({os.path.basename(p).split("_", 2)[2] for p in small})  # nN_runR_roundK.csv
    print(f"8 B cells and barrier: median over the runs and {rounds} small rounds per rank count "
          "(every system in turn at 8 and 16 B, after each run's sweeps).")
print()
for op in OPS:
    for n in ranks:
        present = [(s, name) for s, name in SYSTEMS if (op, n, s) in rows]
        if not present:
            continue
        print(f"## {op}, {n} ranks\n")
        head = "| size | " + " | ".join(name for _, name in present) + " | OMPI/weft | gloo/weft |"
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        for size in ([8] if op == "barrier" else SIZES):
            cells = {s: cell(op, n, s, size) for s, _ in present}
            line = f"| {'-' if op == 'barrier' else (f'{size >> 20} MiB' if size >= 1 << 20 else f'{size >> 10} KiB' if size >= 1024 else f'{size} B')} |"
            for s, _ in present:
                c = cells[s]
                line += " - |" if c is None else (
                    f" {fmt_us(c[0])} |" if op == "barrier" or size == 8 else f" {fmt_us(c[0])} ({c[1]:.2f}) |")
            w, o, g = cells.get("weft"), cells.get("openmpi"), cells.get("torch")
            line += f" {target_met(op, n, size, w, o)} |"
            line += f" {g[0] / w[0]:.1f}x |" if w and g else " - |"
            print(line)
        print()

print("## Summary: Open MPI's time / weft's (> 1: weft faster)\n")
head = "| op | ranks | 8 B | 64 KiB | 1 MiB | 16 MiB | 64 MiB |"
print(head)
print("|" + "---|" * (head.count("|") - 1))
for op in OPS:
    for n in ranks:
        w_any = (op, n, "weft") in rows and (op, n, "openmpi") in rows
        if not w_any:
            continue
        line = f"| {op} | {n} |"
        for size in SIZES:
            if op == "barrier" and size != 8:
                line += " |"
                continue
            w, o = cell(op, n, "weft", size), cell(op, n, "openmpi", size)
            line += f" {o[0] / w[0]:.2f} |" if w and o else " - |"
        print(line)
print()

membw = os.path.join(out, "membw.csv")
if os.path.exists(membw):
    model = {r["kind"]: r for r in csv.DictReader(open(membw))}
    best = model.get("allreduce_model_single_copy_n2")
    w = cell("allreduce", 2, "weft", 64 << 20)
    if best and w:
        print("## Against the memory-bandwidth bound\n")
        print(f"shared/anchors/membw.c measured memcpy and a+=b on this machine; its best-case "
              f"2-rank 64 MiB all_reduce (single copy) is {float(best['time_us']) / 1000:.1f} ms "
              f"(busbw {float(best['busbw_GBps']):.2f} GB/s). weft takes {w[0] / 1000:.1f} ms "
              f"(busbw {w[1]:.2f} GB/s): {float(best['time_us']) / w[0] * 100:.0f}% of the bound.\n")

if mode_counts.get("fast") or mode_counts.get("slow"):
    print("## By vCPU mode (small and mode rounds)\n")
    print("Each small round (8 and 16 B, every op) and mode round (all_reduce 1, 4 and 16 MiB) "
          "read the vCPU mode just before and just after it (bench/vcpu_mode.sh): "
          + ", ".join(f"{mode_counts.get(m, 0)} {m}" for m in ("fast", "slow", "mixed"))
          + " (mixed ones are left out). Cells: median med_us of the rounds in one mode, "
          "rounds in brackets; only cells with both systems in that mode.\n")
    head = "| op | ranks | size | mode | weft | Open MPI | OMPI/weft |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for op in OPS:
        for n in ranks:
            for size in ([8] if op == "barrier" else [8, 1 << 20, 4 << 20, 16 << 20]):
                for mode in ("fast", "slow"):
                    found = {}
                    for s in ("weft", "openmpi"):
                        by = by_mode.get(mode, {}).get((op, n, s))
                        b = nearest_size(by, op, size) if by else None
                        if b is not None:
                            found[s] = by[b]
                    if len(found) < 2:
                        continue
                    w, o = statistics.median(found["weft"]), statistics.median(found["openmpi"])
                    label = "-" if op == "barrier" else (
                        f"{size >> 20} MiB" if size >= 1 << 20 else f"{size} B")
                    print(f"| {op} | {n} | {label} | {mode} | {fmt_us(w)} ({len(found['weft'])}) "
                          f"| {fmt_us(o)} ({len(found['openmpi'])}) | {o / w:.2f} |")
    print()
