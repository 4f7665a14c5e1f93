#!/usr/bin/env python3
"""weft_model_plot.py -- predicted times against group size from weft-model's CSV.

    python3 weft_model_plot.py ROWS.csv -o FILE.png [--dpi 80]
    python3 weft_model_plot.py --check      # exit 0 when matplotlib can be imported

ROWS.csv is what `weft-model --csv` prints. One subplot per (collective, size): predicted time
(log) against ranks (log2), one line per algorithm, the selector's choice at each group size
drawn as a filled marker. weft-model --plot runs this script; it can also be run by hand.
Needs matplotlib (Debian: apt-get install python3-matplotlib).
"""

import argparse
import csv
import sys

MISSING = ("weft-model --plot: matplotlib is missing for {python} (Debian: apt-get install "
           "python3-matplotlib; pip install matplotlib), or set WEFT_BENCH_PYTHON to a Python "
           "that has it")


def size_text(size):
    for unit, suffix in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {suffix}iB"
    return f"{size} B"


def load(path):
    """-> {(collective, bytes): {algorithm: [(ranks, seconds, selected), ...]}}"""
    panels = {}
    with open(path, encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["kind"] != "time":
                continue
            key = (row["collective"], int(row["bytes"]))
            series = panels.setdefault(key, {}).setdefault(row["algorithm"], [])
            series.append((int(row["ranks"]), float(row["seconds"]), row["selected"] == "1"))
    return panels


def draw(panels, out, dpi):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    collectives = list(dict.fromkeys(c for c, _ in panels))
    sizes = sorted({s for _, s in panels})
    fig, axes = plt.subplots(len(collectives), len(sizes), squeeze=False,
                             figsize=(3.2 * len(sizes), 2.6 * len(collectives)))
    for i, collective in enumerate(collectives):
        for j, size in enumerate(sizes):
            ax = axes[i][j]
            for algorithm, points in sorted(panels.get((collective, size), {}).items()):
                points.sort()
                line, = ax.plot([p[0] for p in points], [p[1] for p in points], "-",
                                label=algorithm, linewidth=1.2)
                chosen = [p for p in points if p[2]]
                ax.plot([p[0] for p in chosen], [p[1] for p in chosen], "o",
                        color=line.get_color(), markersize=4)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{collective}, {size_text(size)}", fontsize=9)
            ax.tick_params(labelsize=7)
            ax.grid(True, which="major", linewidth=0.3)
            if j == 0:
                ax.set_ylabel("predicted time (s)", fontsize=8)
            if i == len(collectives) - 1:
                ax.set_xlabel("ranks", fontsize=8)
            ax.legend(fontsize=6)
    fig.suptitle("weft cost model (dots: the selector's choice)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=dpi)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rows", nargs="?")
    parser.add_argument("-o", "--output")
    parser.add_argument("--dpi", type=int, default=80)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(MISSING.format(python=sys.executable), file=sys.stderr)
        return 1
    if args.check:
        return 0
    if not args.rows or not args.output:
        parser.error("ROWS.csv and -o FILE.png are needed")
    panels = load(args.rows)
    if not panels:
        raise SystemExit(f"{args.rows}: no time rows to draw")
    draw(panels, args.output, args.dpi)
    return 0


if __name__ == "__main__":
    sys.exit(main())
