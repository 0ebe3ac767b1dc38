#!/usr/bin/env python3
"""Sums up the log benchmarks/alternate-builds.sh writes: for each build, its runs' medians and
quartiles of wall and CPU time, peak RSS when it was measured, and B's median against A's."""
import statistics
import sys


def quartiles(values):
    values = sorted(values)
    return values[len(values) // 4], statistics.median(values), values[(3 * len(values)) // 4]


def main(path):
    runs = {"A": [], "B": []}
    with open(path) as log:
        for line in log:
            fields = line.split()
            if len(fields) < 3 or fields[0] not in runs:
                continue  # /usr/bin/time's own notes ("Command exited with non-zero status")
            cpu = sum(float(part) for part in fields[2].split("+"))
            rss = int(fields[3]) / 1024 if len(fields) > 3 else None
            runs[fields[0]].append((float(fields[1]), cpu, rss))
    medians = {}
    for label, rows in runs.items():
        if not rows:
            continue
        wall, cpu = quartiles([row[0] for row in rows]), quartiles([row[1] for row in rows])
        rss = [row[2] for row in rows if row[2] is not None]
        medians[label] = (wall[1], cpu[1])
        text = f"{label}: {len(rows)} runs, wall {wall[1]:.3f} s ({wall[0]:.3f}-{wall[2]:.3f}), CPU {cpu[1]:.3f} s ({cpu[0]:.3f}-{cpu[2]:.3f})"
        if rss:
            text += f", peak RSS {statistics.median(rss):.1f} MiB"
        print(text)
    if len(medians) == 2:
        (wall_a, cpu_a), (wall_b, cpu_b) = medians["A"], medians["B"]
        print(f"B / A: wall {wall_b / wall_a:.3f}, CPU {cpu_b / cpu_a:.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: alternate-summary.py LOG")
    main(sys.argv[1])
