#!/usr/bin/env python3
"""The async functions of a binary by the size of their frames (their async context), largest first.

An async function's frame is allocated from its task's allocator when it is called, and a task
keeps the memory of its deepest frames until it ends: what a job holds while it waits is the sum
of the frames of the deepest chain it went through. The size is in the function's async function
pointer (the symbol ending in `Tu`: a 32-bit relative offset, then the 32-bit context size).

    benchmarks/async-frames.py .build/release-build/release/mirror | swift demangle --simplified | head -30
"""
import struct
import subprocess
import sys


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: benchmarks/async-frames.py BINARY")
    binary = sys.argv[1]
    segments = []
    for line in subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        fields = line.split()
        if fields and fields[0] == "LOAD":
            segments.append((int(fields[2], 16), int(fields[1], 16), int(fields[4], 16)))
    with open(binary, "rb") as file:
        data = file.read()
    rows = []
    symbols = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    for line in symbols.splitlines():
        fields = line.split(None, 2)
        if len(fields) != 3 or not fields[2].endswith("Tu"):
            continue
        address = int(fields[0], 16)
        for start, offset, size in segments:
            if start <= address < start + size:
                _, context = struct.unpack_from("<iI", data, offset + address - start)
                rows.append((context, fields[2]))
                break
    for context, name in sorted(rows, reverse=True):
        print(context, name)


if __name__ == "__main__":
    main()
