#!/usr/bin/env python3
"""plot_busbw.py -- busbw vs message size, one line per (system, config), from anchor-schema CSVs.

The one plotting module of the comparison scripts (shm_compare.sh, collectives_compare.sh,
torch_compare.sh, pingpong_compare.sh): weft beside the anchors. Reads every *.csv
(recursively) under one or more results directories, or CSV files named directly, that has the
anchors' header (shared/anchors/README.md; weft-bench --csv writes it too):

    system,config,ranks,cores,oversub,op,dtype,count,bytes,iters,time_us,med_us,min_us,
    max_us,algbw_GBps,busbw_GBps,check

or the point-to-point one of bench/pingpong_compare.sh -o (med_lat_us for med_us; ops
pingpong and stream, whose busbw is bytes / med_lat_us: one-way time, algbw = busbw):

    system,config,ranks,op,bytes,iters,window,lat_us,med_lat_us,min_lat_us,max_lat_us,
    bw_GBps,med_bw_GBps,check[,run,load1]

and writes, per op, one PNG with a subplot per rank count: busbw (GB/s) against message size,
log-log, one line per (system, config).

* busbw is recomputed from med_us (the median timed batch, less noisy than the mean time_us):
      busbw = bytes / med_us / 1e3 * factor     (GB/s, 1e9)
  with nccl-tests' factors: allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall (n-1)/n;
  broadcast, pingpong, stream 1. barrier is skipped. Extra ops named "<op>_<variant>" (e.g. native gloo's
  allreduce_ring_chunked) use <op>'s factor; they are plotted only when asked for (--ops).
* Rows with check FAIL / unsupported, or a missing / non-positive bytes or med_us, are skipped.
* Several rows for the same (system, config, ranks, op, bytes) within one directory (e.g. the
  run1/ run2/ run3/ sub-directories of bench/collectives_compare.sh -r 3) are combined into
  the median of their med_us; the legend says "median of k runs" when k > 1.
* If the same (system, config) appears in more than one directory, the line's label gets the
  directory's tag ("DIR=TAG" on the command line, default: the directory's name); lines from
  the second, third ... directory are dashed, dotted ..., same colour for the same
  (system, config).

Usage:
    /usr/bin/python3 bench/plot_busbw.py DIR|FILE.csv[=TAG] [...] [-o OUTDIR]
        [--ops allreduce,allgather,...] [--ranks 2,4] [--systems weft,openmpi,...]
        [--exclude netns,...] [--dpi 90]

--systems / --exclude take comma-separated, case-insensitive substrings matched against
"system config" (e.g. "openmpi", "ob1-tcp", "gloo-native", "netns"). Default output
directory: the first DIR (a FILE's directory). Needs matplotlib (Debian: apt-get install python3-matplotlib);
otherwise stdlib only.
"""

import argparse
import csv
import os
import statistics
import sys

REQUIRED = ("system", "config", "ranks", "op", "bytes", "check")
MED = ("med_us", "med_lat_us")  # the anchors' collectives, pingpong_compare.sh's rows
STD_OPS = ("allreduce", "allgather", "broadcast", "reduce_scatter", "alltoall", "pingpong",
           "stream")
ONE_FACTOR = ("broadcast", "pingpong", "stream")
SKIP_CHECK = ("fail", "unsupported")
LINESTYLES = ("-", "--", ":", "-.")
STYLE_NAMES = ("solid", "dashed", "dotted", "dash-dot")
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "<", ">", "*", "h", "p")


def bus_factor(op, n):
    base = op
    if base not in STD_OPS + ("barrier",):
        base = next((o for o in STD_OPS if op.startswith(o + "_")), None)
    if base is None or base == "barrier":
        return None
    if base == "allreduce":
        return 2.0 * (n - 1) / n
    if base in ONE_FACTOR:
        return 1.0
    return (n - 1) / n


def csv_files(d):
    if os.path.isfile(d):
        yield d
        return
    for root, dirs, files in os.walk(d):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".csv"):
                yield os.path.join(root, f)


def load(dirs):
    """-> {(dir_index, system, config, ranks, op): {bytes: [med_us, ...]}}, cores/oversub info,
    per-key set of source files."""
    data, info, sources = {}, {}, {}
    skipped = {"check": 0, "bad": 0}
    for di, (d, _tag) in enumerate(dirs):
        nfiles = 0
        for path in csv_files(d):
            with open(path, newline="") as fh:
                rd = csv.DictReader(fh)
                fields = rd.fieldnames or []
                med_column = next((c for c in MED if c in fields), None)
                if med_column is None or not all(c in fields for c in REQUIRED):
                    continue  # other schema (membw.csv, timings.csv, netns_iperf.csv, ...)
                nfiles += 1
                for r in rd:
                    if (r.get("op") or "").strip() == "barrier":
                        continue  # no busbw
                    if (r.get("check") or "").strip().lower() in SKIP_CHECK:
                        skipped["check"] += 1
                        continue
                    try:
                        n = int(r["ranks"])
                        b = int(float(r["bytes"]))
                        med = float(r[med_column])
                    except (TypeError, ValueError):
                        skipped["bad"] += 1
                        continue
                    if n < 1 or b <= 0 or not med > 0:
                        skipped["bad"] += 1
                        continue
                    key = (di, r["system"].strip(), r["config"].strip(), n, r["op"].strip())
                    data.setdefault(key, {}).setdefault(b, []).append(med)
                    sources.setdefault(key, set()).add(os.path.dirname(path))
                    info.setdefault(n, (r.get("cores", ""), r.get("oversub", "")))
        if nfiles == 0:
            print(f"warning: no anchor-schema CSV in {d}", file=sys.stderr)
    return data, info, sources, skipped


def save_png(fig, path, dpi):
    """Save as a palette PNG (keeps plots well under 100 KB); plain savefig without Pillow."""
    try:
        from PIL import Image  # a matplotlib dependency
    except ImportError:
        fig.savefig(path, dpi=dpi)
        return
    fig.set_dpi(dpi)
    fig.canvas.draw()
    img = Image.frombuffer("RGBA", fig.canvas.get_width_height(),
                           fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
    img.quantize(colors=64, method=Image.Quantize.MEDIANCUT if hasattr(Image, "Quantize")
                 else 0).save(path, optimize=True)


def size_label(b):
    for unit, s in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if b >= unit and b % unit == 0:
            return f"{b // unit}{s}"
    return f"{b}B" if b < 1024 else str(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", metavar="DIR[=TAG]",
                    help="results directories or CSV files")
    ap.add_argument("-o", "--out", help="output directory (default: the first DIR)")
    ap.add_argument("--ops", help="comma-separated ops (default: the five standard ops; "
                    "'all': every op found except barrier)")
    ap.add_argument("--ranks", help="comma-separated rank counts (default: all found)")
    ap.add_argument("--systems", help="comma-separated substrings of 'system config' to keep")
    ap.add_argument("--exclude", help="comma-separated substrings of 'system config' to drop")
    ap.add_argument("--dpi", type=int, default=90)
    ap.add_argument("--prefix", default="busbw_", help="PNG name prefix (default busbw_)")
    a = ap.parse_args()

    dirs = []
    for spec in a.dirs:
        d, _, tag = spec.partition("=")
        d = d.rstrip("/") or "/"
        if not os.path.isdir(d) and not os.path.isfile(d):
            ap.error(f"not a directory or a file: {d}")
        name = os.path.basename(os.path.abspath(d))
        dirs.append((d, tag or (os.path.splitext(name)[0] if os.path.isfile(d) else name)))
    first = dirs[0][0]
    out = a.out or (first if os.path.isdir(first) else os.path.dirname(os.path.abspath(first)))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FixedFormatter, NullLocator

    data, info, sources, skipped = load(dirs)
    split = lambda s: [x.strip().lower() for x in s.split(",") if x.strip()] if s else None
    want_ops, want_sys, no_sys = split(a.ops), split(a.systems), split(a.exclude)
    want_ranks = [int(x) for x in split(a.ranks)] if a.ranks else None

    def keep(key):
        _di, sysname, cfg, n, op = key
        name = f"{sysname} {cfg}".lower()
        if bus_factor(op, n) is None:
            return False
        if want_ops is None and op not in STD_OPS:
            return False
        if want_ops is not None and "all" not in want_ops and op.lower() not in want_ops:
            return False
        if want_ranks is not None and n not in want_ranks:
            return False
        if want_sys is not None and not any(s in name for s in want_sys):
            return False
        if no_sys is not None and any(s in name for s in no_sys):
            return False
        return True

    keys = [k for k in data if keep(k)]
    if not keys:
        sys.exit("nothing to plot (check the directories and the filters)")

    # Stable colour/marker per (system, config), linestyle per directory.
    lines = sorted({(k[1], k[2]) for k in keys})
    cmap = plt.get_cmap("tab10" if len(lines) <= 10 else "tab20")
    style = {sc: (cmap(i % cmap.N), MARKERS[i % len(MARKERS)]) for i, sc in enumerate(lines)}
    dirs_of = {}
    for k in keys:
        dirs_of.setdefault((k[1], k[2]), set()).add(k[0])

    os.makedirs(out, exist_ok=True)
    ops = sorted({k[4] for k in keys}, key=lambda o: (STD_OPS.index(o) if o in STD_OPS else 99, o))
    written = []
    for op in ops:
        ranks = sorted({k[3] for k in keys if k[4] == op})
        fig, axes = plt.subplots(1, len(ranks), figsize=(5.2 * len(ranks) + 0.6, 5.4),
                                 sharey=True, squeeze=False)
        handles = {}
        allb = set()
        for ax, n in zip(axes[0], ranks):
            f = bus_factor(op, n)
            for k in sorted(k for k in keys if k[4] == op and k[3] == n):
                di, sysname, cfg, _n, _op = k
                pts = sorted(data[k].items())
                xs = [b for b, _ in pts]
                ys = [b / statistics.median(m) / 1e3 * f for b, m in pts]
                allb.update(xs)
                nruns = len(sources[k])
                label = f"{sysname} {cfg}"
                if len(dirs_of[(sysname, cfg)]) > 1:
                    label += f" ({dirs[di][1]})"
                if nruns > 1:
                    label += f" [median of {nruns} runs]"
                color, marker = style[(sysname, cfg)]
                h, = ax.plot(xs, ys, LINESTYLES[di % len(LINESTYLES)], color=color,
                             marker=marker, markersize=3.5, linewidth=1.3, label=label)
                handles.setdefault(label, h)
            cores, oversub = info.get(n, ("", ""))
            title = f"{n} ranks"
            if cores:
                title += f" on {cores} cores" + (" (oversubscribed)" if oversub == "1" else "")
            ax.set_title(title, fontsize=10)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.grid(True, which="major", alpha=0.35)
            ax.grid(True, which="minor", axis="y", alpha=0.12)
            ax.set_xlabel("message size (bytes, nccl-tests meaning)", fontsize=9)
            ax.tick_params(labelsize=8)
        ticks = sorted(allb)
        if len(ticks) > 12:  # keep the x labels readable
            ticks = [t for i, t in enumerate(ticks) if i % 2 == 0 or t == ticks[-1]]
        for ax in axes[0]:
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_major_formatter(FixedFormatter([size_label(t) for t in ticks]))
            ax.xaxis.set_minor_locator(NullLocator())
        axes[0][0].set_ylabel("busbw (GB/s) from med_us", fontsize=9)
        ncol = 2 if len(handles) > 4 else 1
        fig.legend(list(handles.values()), list(handles.keys()), loc="lower center",
                   ncol=ncol, fontsize=7.5, frameon=False)
        fig.suptitle(f"{op}: busbw vs size (busbw = bytes/med_us x nccl-tests factor)",
                     fontsize=11)
        if len(dirs) > 1:
            fig.text(0.5, 0.925, "line style = directory:  " + ",  ".join(
                f"{STYLE_NAMES[i % len(STYLE_NAMES)]}: {t}" for i, (_d, t) in enumerate(dirs)),
                ha="center", fontsize=8)
        nrows = (len(handles) + ncol - 1) // ncol
        fig.tight_layout(rect=(0, min(0.45, 0.032 * nrows + 0.01), 1,
                                  0.92 if len(dirs) > 1 else 0.95))
        path = os.path.join(out, f"{a.prefix}{op}.png")
        save_png(fig, path, a.dpi)
        plt.close(fig)
        written.append(path)

    for p in written:
        print(f"{p}  ({os.path.getsize(p) // 1024} KiB)")
    if skipped["check"] or skipped["bad"]:
        print(f"skipped rows: {skipped['check']} FAIL/unsupported, {skipped['bad']} unparsable",
              file=sys.stderr)


if __name__ == "__main__":
    main()
