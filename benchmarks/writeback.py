#!/usr/bin/env python3
"""When to start a large body's writeback while it is written: 1 GiB in writes of 1 MiB (mirror's
buffer), then fdatasync, into a fresh ext4 on a loop device (as benchmarks/throughput.sh makes,
when run as root; otherwise into a folder of the directory given), the ways alternated round by
round. The steps are benchmarks/writeback.c's (compiled here):

  none      the writeback left to the fdatasync
  each      started after every write, for the MiB just written (mirror before 2026-12-07)
  lagging   started for what lies 8 MiB or more behind the end, and for the tail at the end
            (mirror since)

Prints each way's wall, kernel and user seconds: medians, and the range of the rounds.

    sudo benchmarks/writeback.py [--rounds=N] [DIRECTORY]
"""
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile

WAYS = ["none", "each", "lagging"]
HERE = os.path.dirname(os.path.abspath(__file__))


def file_protocol():
    """benchmarks/file-protocol.py, for its fresh file system."""
    spec = importlib.util.spec_from_file_location("file_protocol", os.path.join(HERE, "file-protocol.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    rounds, parent = 5, None
    for argument in sys.argv[1:]:
        if argument.startswith("--rounds="):
            rounds = int(argument.split("=", 1)[1])
        elif argument.startswith("-"):
            sys.exit(__doc__)
        else:
            parent = argument
    parent = parent or tempfile.gettempdir()
    fresh_filesystem = file_protocol().fresh_filesystem
    results = {way: [] for way in WAYS}
    places = set()
    with tempfile.TemporaryDirectory() as work:
        binary = os.path.join(work, "writeback")
        if subprocess.call([os.environ.get("CC", "cc"), "-O2", "-o", binary, os.path.join(HERE, "writeback.c")]) != 0:
            sys.exit("writeback: writeback.c could not be compiled")
        for _ in range(rounds):
            for way in WAYS:
                mounted = fresh_filesystem(parent)
                root = mounted[0] if mounted else tempfile.mkdtemp(dir=parent)
                places.add("a fresh ext4 on a loop device" if mounted else "a folder of " + parent)
                try:
                    output = subprocess.run([binary, way, os.path.join(root, "body")], capture_output=True, text=True)
                    if output.returncode != 0:
                        sys.exit(output.stderr.strip() or "writeback: %s failed" % way)
                    results[way].append(tuple(float(field) for field in output.stdout.split()))
                finally:
                    if mounted:
                        subprocess.call(["umount", mounted[0]])
                        os.remove(mounted[1])
                        os.rmdir(mounted[0])
                    else:
                        subprocess.call(["rm", "-rf", root])
    print("1 GiB in writes of 1 MiB, then fdatasync, %s, median (range) of %d" % (" and ".join(sorted(places)), rounds))
    print("| writeback started | wall s | kernel CPU s | user CPU s |")
    print("|---|---|---|---|")
    for way in WAYS:
        cells = []
        for index in range(3):
            values = [result[index] for result in results[way]]
            cells.append("%.2f (%.2f-%.2f)" % (statistics.median(values), min(values), max(values)))
        print("| %s | %s |" % (way, " | ".join(cells)))


if __name__ == "__main__":
    main()
