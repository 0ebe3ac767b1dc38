#!/usr/bin/env python3
"""What mirror's way of writing a file costs on its own: no network, no state, no scheduler.

The small workload's files (1,000 of 50 KiB and 1,000 of 8 KiB) are written by 16 threads, as
mirror's 16 downloads would, in five ways, each into a fresh ext4 (a loop device of 8 GiB, as
benchmarks/throughput.sh makes, when run as root; otherwise into a folder of the directory
given). The steps are done by benchmarks/file-protocol.c, compiled here, so that the CPU counted
is the steps' own:

  created       open the final name, write, close: what curl -o and wget do
  synced        the same, then fdatasync before close: durability alone
  named         mirror's steps without the sync: the partial created in a folder apart, written,
                its resume record set as an extended attribute, renamed into place with
                RENAME_NOREPLACE, the server's date set, the record taken off
  mirror        mirror's steps: `named`, with the writeback started after the write and the file
                synced before it gets its name (durability before naming)
  batched       `mirror` with one syncfs for many files instead of an fdatasync each: the
                writers hand their files to one thread, which 2 ms after the first of a batch
                (once the last batch is named) syncs the file system once and names all it
                was handed (durability before naming, grouped as far as it goes: no writer
                waits for its file's sync); the syncs per run are the last column

Each way's wall and CPU times are the medians of the rounds; `wall / created` divides the
unrounded medians by `created`'s. The CPU is the process's own: work the kernel hands to its
flusher threads (the writeback a syncfs starts) is not counted. benchmarks/throughput.sh
measures the whole tools on the same files: what a way costs here is a floor under any tool that
writes files that way.

    sudo benchmarks/file-protocol.py [--rounds=N] [DIRECTORY]
"""
import os
import statistics
import subprocess
import sys
import tempfile

THREADS = 16
WAYS = ["created", "synced", "named", "mirror", "batched"]
FILES = 2000


def compile_helper(work):
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "file-protocol.c")
    binary = os.path.join(work, "file-protocol")
    compiler = os.environ.get("CC", "cc")
    if subprocess.call([compiler, "-O2", "-pthread", "-o", binary, source]) != 0:
        sys.exit("file-protocol: %s could not compile %s" % (compiler, source))
    return binary


def fresh_filesystem(parent):
    """A fresh ext4 on a loop device (its tables written out, so that no background
    initialisation competes with the syncs), or None when none can be mounted."""
    if os.geteuid() != 0 or subprocess.call(["which", "mkfs.ext4"], stdout=subprocess.DEVNULL) != 0:
        return None
    mount_point = tempfile.mkdtemp(dir=parent)
    image = mount_point + ".img"
    with open(image, "wb") as file:
        file.truncate(8 << 30)
    made = subprocess.call(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", image]) == 0
    if made and subprocess.call(["mount", "-o", "loop", image, mount_point]) == 0:
        return mount_point, image
    os.remove(image)
    os.rmdir(mount_point)
    return None


def run_way(binary, way, parent):
    """One round of `way`: its wall, kernel and user seconds, and where it ran."""
    mounted = fresh_filesystem(parent)
    root = mounted[0] if mounted else tempfile.mkdtemp(dir=parent)
    try:
        output = subprocess.run([binary, way, root, str(THREADS)], capture_output=True, text=True)
        if output.returncode != 0:
            sys.exit(output.stderr.strip() or "file-protocol: %s failed" % way)
        wall, kernel, user = (float(field) for field in output.stdout.split())
        syncs = [int(line.split()[1]) for line in output.stderr.splitlines() if line.startswith("syncs ")]
        where = "a fresh ext4 on a loop device" if mounted else "a folder of " + parent
        return wall, kernel, user, (syncs[0] if syncs else None), where
    finally:
        if mounted:
            subprocess.call(["umount", mounted[0]])
            os.remove(mounted[1])
            os.rmdir(mounted[0])
        else:
            subprocess.call(["rm", "-rf", root])


def main():
    rounds, parent = 3, None
    for argument in sys.argv[1:]:
        if argument.startswith("--rounds="):
            rounds = int(argument.split("=", 1)[1])
        elif argument.startswith("-"):
            sys.exit(__doc__)
        else:
            parent = argument
    parent = parent or tempfile.gettempdir()
    results = {way: [] for way in WAYS}
    syncs = {way: [] for way in WAYS}
    places = set()
    with tempfile.TemporaryDirectory() as work:
        binary = compile_helper(work)
        for _ in range(rounds):
            for way in WAYS:
                wall, kernel, user, count, where = run_way(binary, way, parent)
                results[way].append((wall, kernel, user))
                if count is not None:
                    syncs[way].append(count)
                places.add(where)
    print("%d files (1,000 x 50 KiB + 1,000 x 8 KiB), %d threads, %s, median of %d"
          % (FILES, THREADS, " and ".join(sorted(places)), rounds))
    print("| way | wall s | kernel CPU s | user CPU s | kernel CPU per file | wall / created | syncfs calls |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    base = statistics.median(wall for wall, _, _ in results["created"])
    for way in WAYS:
        wall = statistics.median(wall for wall, _, _ in results[way])
        kernel = statistics.median(kernel for _, kernel, _ in results[way])
        user = statistics.median(user for _, _, user in results[way])
        counted = "%d-%d" % (min(syncs[way]), max(syncs[way])) if syncs[way] else ""
        print("| %s | %.3f | %.3f | %.3f | %.0f us | %.2f | %s |" % (way, wall, kernel, user, kernel / FILES * 1e6, wall / base, counted))


if __name__ == "__main__":
    main()
