#!/usr/bin/env python3
"""weft_bench_plot.py -- busbw against size from weft-bench's JSON lines (weft-bench --plot).

    python3 weft_bench_plot.py ROWS.jsonl -o FILE.png [--dpi 100]
    python3 weft_bench_plot.py --check      # exit 0 when matplotlib can be imported

ROWS.jsonl is what `weft-bench --json FILE` writes (docs/weft-bench.md): a "settings" object,
then one "result" object per measured cell. weft-bench --plot runs this script after its run;
it can also be run by hand on a --json file.

One subplot per op; in each, one line per (dtype, reduce op) series, solid out of place and
dashed in place, same colour for the same series: busbw (GB/s, weft-bench's own column,
nccl-tests' meaning) against the message size, log2 x axis, log y axis. Rows of size 0 (barrier)
and rows with no time are left out. Needs matplotlib (Debian: apt-get install
python3-matplotlib); otherwise the standard library only.
"""

import argparse
import json
import math
import sys

MISSING = ("weft-bench --plot: matplotlib is missing for {python} (Debian: apt-get install "
           "python3-matplotlib; pip install matplotlib), or set WEFT_BENCH_PYTHON to a Python "
           "that has it")
STYLES = {"out-of-place": ("-", "o"), "in-place": ("--", "s")}


def load(path):
    """-> (settings dict, {op: {(dtype, redop): {placement: [(size, busbw), ...]}}})"""
    settings, series = {}, {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError as error:
                raise SystemExit(f"{path}:{number}: not JSON ({error})")
            kind = obj.get("type")
            if kind == "settings":
                settings = obj
            elif kind == "result":
                size, busbw = obj.get("size") or 0, obj.get("busbw_GBps") or 0
                if size <= 0 or not busbw > 0:
                    continue
                key = (obj.get("dtype", "?"), obj.get("redop"))
                lines = series.setdefault(obj.get("op", "?"), {}).setdefault(key, {})
                lines.setdefault(obj.get("placement", "out-of-place"), []).append((size, busbw))
    return settings, series


def size_label(b):
    for unit, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if b >= unit and b % unit == 0:
            return f"{b // unit}{suffix}"
    return str(b)


def draw(settings, series, out, dpi):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    ops = list(series)
    cols = min(len(ops), 2)
    rows = math.ceil(len(ops) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, 4.6 * rows), squeeze=False)
    cmap = plt.get_cmap("tab10")
    for index, op in enumerate(ops):
        ax = axes[index // cols][index % cols]
        sizes = set()
        for colour, ((dtype, redop), placements) in enumerate(sorted(
                series[op].items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))):
            name = dtype if redop is None else f"{dtype} {redop}"
            for placement, points in sorted(placements.items(), reverse=True):
                points.sort()
                xs = [s for s, _ in points]
                sizes.update(xs)
                style, marker = STYLES.get(placement, (":", "^"))
                ax.plot(xs, [b for _, b in points], style, marker=marker, markersize=3.5,
                        linewidth=1.3, color=cmap(colour % cmap.N), label=f"{name}, {placement}")
        ax.set_title(op, fontsize=10)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sorted(sizes)
        while len(ticks) > 12:
            ticks = ticks[::2] if ticks[-1] in ticks[::2] else ticks[::2] + [ticks[-1]]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FixedFormatter([size_label(t) for t in ticks]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.tick_params(labelsize=8)
        ax.grid(True, which="major", alpha=0.35)
        ax.set_xlabel("size (bytes)", fontsize=9)
        ax.set_ylabel("busbw (GB/s)", fontsize=9)
        ax.legend(fontsize=7, frameon=False)
    for index in range(len(ops), rows * cols):
        axes[index // cols][index % cols].axis("off")
    title = "weft-bench: busbw against size"
    if settings:
        title += (f" ({settings.get('ranks', '?')} ranks, {settings.get('cores', '?')} cores, "
                  f"weft {settings.get('weft_version', '?')}, config {settings.get('config', '?')})")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(out, dpi=dpi, format="png")
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rows", nargs="?", help="weft-bench --json file (JSON lines)")
    parser.add_argument("-o", "--out", help="the PNG to write")
    parser.add_argument("--dpi", type=int, default=100)
    parser.add_argument("--check", action="store_true",
                        help="only check that matplotlib can be imported")
    args = parser.parse_args()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(MISSING.format(python=sys.executable), file=sys.stderr)
        return 2
    if args.check:
        return 0
    if not args.rows or not args.out:
        parser.error("ROWS and -o FILE.png are needed")
    settings, series = load(args.rows)
    if not series:
        print(f"weft-bench --plot: nothing to draw in {args.rows} (no result with a size and a "
              "time; barrier alone moves no bytes)", file=sys.stderr)
        return 1
    draw(settings, series, args.out, args.dpi)
    print(f"# busbw plot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
