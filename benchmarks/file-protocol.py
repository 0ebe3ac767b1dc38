#!/usr/bin/env python3
"""What mirror's way of writing a file costs on its own: no network, no state, no scheduler.

The small workload's files (1,000 of 50 KiB and 1,000 of 8 KiB) are written by 16 threads, as
mirror's 16 downloads would, in four ways, each into a fresh ext4 (a loop device, when run as
root; otherwise into a folder of the directory given):

  created       open the final name, write, close: what curl -o and wget do
  synced        the same, then fdatasync before close: durability alone
  named         mirror's steps without the sync: the partial created in a folder apart, written,
                its resume record set as an extended attribute, renamed into place with
                RENAME_NOREPLACE, the record taken off, the server's date set
  mirror        mirror's steps: `named`, with the writeback started after the write and the file
                synced before it gets its name (durability before naming)

Each way's wall and CPU time is the median of the rounds, the kernel's CPU (what the way costs)
apart from the user CPU (Python's own, per call); the last column divides by `created`.
benchmarks/throughput.sh measures the whole tools on the same files: what a way costs here is a
floor under any tool that writes files that way.

    sudo benchmarks/file-protocol.py [--rounds=N] [DIRECTORY]
"""
import ctypes
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time

libc = ctypes.CDLL("libc.so.6", use_errno=True)
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
libc.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
RENAME_NOREPLACE = 1
SYNC_FILE_RANGE_WRITE = 2
THREADS = 16
WAYS = ["created", "synced", "named", "mirror"]
RECORD = b"url https://i.example.org/abcdefg.jpg\netag \"5f3a-1c2b\"\nlast-modified Tue, 24 Nov 2026 10:00:00 GMT\nlength 51200\n"


def files():
    full, thumbnail = os.urandom(50 << 10), os.urandom(8 << 10)
    for number in range(1000):
        yield "i%05d.jpg" % number, full
        yield "i%05db.jpg" % number, thumbnail


def write_one(way, final_dir, parts_dir, name, body):
    try:
        os.stat(name, dir_fd=final_dir)
    except FileNotFoundError:
        pass
    if way in ("created", "synced"):
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=final_dir)
        os.write(fd, body)
        if way == "synced":
            os.fdatasync(fd)
        os.close(fd)
        return
    part = name + ".part"
    try:
        os.stat(part, dir_fd=parts_dir)
    except FileNotFoundError:
        pass
    fd = os.open(part, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=parts_dir)
    os.fstat(fd)
    os.pwrite(fd, body, 0)
    if way == "mirror":
        libc.sync_file_range(fd, 0, len(body), SYNC_FILE_RANGE_WRITE)
    os.close(fd)
    fd = os.open(part, os.O_RDONLY, dir_fd=parts_dir)
    os.fstat(fd)
    os.setxattr(fd, "user.mirror.partial", RECORD)
    if way == "mirror":
        os.fdatasync(fd)
    if libc.renameat2(parts_dir, part.encode(), final_dir, name.encode(), RENAME_NOREPLACE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2 " + name)
    os.removexattr(fd, "user.mirror.partial")
    os.utime(fd, (1764000000, 1764000000))
    os.close(fd)


def run_way(way, root):
    final_path, parts_path = os.path.join(root, way), os.path.join(root, way + "-partials")
    os.mkdir(final_path)
    os.mkdir(parts_path)
    final_dir = os.open(final_path, os.O_RDONLY | os.O_DIRECTORY)
    parts_dir = os.open(parts_path, os.O_RDONLY | os.O_DIRECTORY)
    work = list(files())
    lock = threading.Lock()
    failures = []

    def worker():
        while True:
            with lock:
                if not work:
                    return
                name, body = work.pop()
            try:
                write_one(way, final_dir, parts_dir, name, body)
            except OSError as error:
                failures.append(error)
                return

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall, after = time.monotonic() - start, resource.getrusage(resource.RUSAGE_SELF)
    os.close(final_dir)
    os.close(parts_dir)
    if failures:
        sys.exit("%s: %s" % (way, failures[0]))
    return wall, after.ru_stime - before.ru_stime, after.ru_utime - before.ru_utime


def fresh_filesystem(parent):
    """A fresh ext4 on a loop device (as benchmarks/throughput.sh makes), or None."""
    if os.geteuid() != 0 or subprocess.call(["which", "mkfs.ext4"], stdout=subprocess.DEVNULL) != 0:
        return None
    mount_point = tempfile.mkdtemp(dir=parent)
    image = mount_point + ".img"
    with open(image, "wb") as file:
        file.truncate(2 << 30)
    if subprocess.call(["mkfs.ext4", "-q", "-F", image]) == 0 and subprocess.call(["mount", "-o", "loop", image, mount_point]) == 0:
        return mount_point, image
    os.remove(image)
    os.rmdir(mount_point)
    return None


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
    where = "a folder of " + parent
    for _ in range(rounds):
        for way in WAYS:
            mounted = fresh_filesystem(parent)
            root = mounted[0] if mounted else tempfile.mkdtemp(dir=parent)
            where = "a fresh ext4 on a loop device" if mounted else where
            try:
                results[way].append(run_way(way, root))
            finally:
                if mounted:
                    subprocess.call(["umount", mounted[0]])
                    os.remove(mounted[1])
                    os.rmdir(mounted[0])
                else:
                    subprocess.call(["rm", "-rf", root])
    count = sum(1 for _ in files())
    print("%d files (1,000 x 50 KiB + 1,000 x 8 KiB), %d threads, %s, median of %d" % (count, THREADS, where, rounds))
    print("| way | wall s | kernel CPU s | user CPU s (Python's own) | kernel CPU per file | wall / created |")
    print("|---|---:|---:|---:|---:|---:|")
    base = statistics.median(wall for wall, _, _ in results["created"])
    for way in WAYS:
        wall = statistics.median(wall for wall, _, _ in results[way])
        kernel = statistics.median(kernel for _, kernel, _ in results[way])
        user = statistics.median(user for _, _, user in results[way])
        print("| %s | %.3f | %.3f | %.3f | %.0f us | %.2f |" % (way, wall, kernel, user, kernel / count * 1e6, wall / base))


if __name__ == "__main__":
    main()
