#!/usr/bin/env python3
"""The functions of mirror's binary that runs executed, as a section ordering file for gold.

    benchmarks/link-order.py BINARY CALLGRIND_OUT... > scripts/link-order
    benchmarks/link-order.py --coverage BINARY scripts/link-order
    benchmarks/link-order.py --check BINARY scripts/link-order

The first form reads callgrind outputs of runs of BINARY (benchmarks/callgrind-wrapper.sh runs a
copy of it without DWARF: the object the output's cmd: line names) and prints
`.text.NAME` for every function of the binary that ran, by its mangled name, sorted. With
`-function-sections` each function is a section of that name, and `--section-ordering-file` puts
them side by side: the pages a run touches are then a few hundred KiB of code instead of 64 KiB
windows across the whole binary (see BENCHMARKS.md, "The functions a run executes, side by side").

The second form tells how many of the file's functions BINARY still has, and how many of them it
has side by side: code renamed or removed since the file was made is no longer placed, and a
build without scripts/release-flags' flags leaves them where they were. The third form says the
same and fails when fewer than half of them are side by side (scripts/test-install): some fifth
of the list is the toolchain archives' code, which cannot move, and a build without the flags has
a few dozen together.
"""
import os
import re
import subprocess
import sys


def symbols(binary):
    """Mangled name of every function symbol, and the mangled names behind each demangled one
    (callgrind demangles C++ names but leaves Swift's as they are)."""
    def read(*options):
        out = subprocess.run(["nm", "-S", *options, binary], capture_output=True, text=True, check=True).stdout
        rows = []
        for line in out.splitlines():
            fields = line.split(None, 3)
            if len(fields) == 4 and fields[2] in "tTwW":
                rows.append((fields[0], fields[1], fields[3]))
        return rows
    mangled = read()
    by_place = {}
    for address, size, name in mangled:
        by_place.setdefault((address, size), []).append(name)
    demangled = {}
    for address, size, name in read("-C"):
        demangled.setdefault(name, set()).update(by_place.get((address, size), []))
    return {name for _, _, name in mangled}, demangled


def executed(callgrind_out):
    """Names of the functions callgrind saw run in the program's own object (not a library): the
    object named by the output's `cmd:` line, the copy of the binary the wrapper ran."""
    objects, functions, in_program, names, program = {}, {}, False, set(), None
    pattern = re.compile(r"(c?ob|c?fn)=\((\d+)\)(?: (.*))?$")
    with open(callgrind_out, errors="replace") as lines:
        for line in lines:
            line = line.rstrip("\n")
            if program is None and line.startswith("cmd: "):
                # As given on the command line; callgrind names objects by their resolved paths.
                program = os.path.realpath(line[len("cmd:"):].strip().split(" ", 1)[0])
                continue
            match = pattern.match(line)
            if not match:
                continue
            kind, number, name = match.groups()
            table = objects if kind.endswith("ob") else functions
            if name:
                table[number] = name
            if kind == "ob":
                in_program = program is not None and os.path.realpath(objects[number]) == program
            elif kind == "fn" and in_program:
                names.add(re.sub(r"'\d+$", "", functions[number]))
    if program is None:
        raise SystemExit(f"link-order: {callgrind_out} has no cmd: line; is it callgrind's output?")
    return names


def coverage(binary, order_file):
    """How many of the listed functions the binary has, and how many of those sit together. gold
    can only move a function that has a section of its own: the toolchain's static archives
    compile much of the standard library and all of FoundationEssentials into one section per
    object file, and those functions stay where they are; a build without the list's flags
    leaves the listed functions where the objects put them."""
    wanted = {line.strip()[len(".text."):] for line in open(order_file) if line.startswith(".text.")}
    out = subprocess.run(["nm", "-n", binary], capture_output=True, text=True, check=True).stdout
    places = []  # the function symbols at each address, by address (aliases share one)
    for line in out.splitlines():
        fields = line.split(None, 2)
        if len(fields) == 3 and fields[1] in "tTwW":
            if places and places[-1][0] == fields[0]:
                places[-1][1].append(fields[2])
            else:
                places.append((fields[0], [fields[2]]))
    present = {name for _, names in places for name in names} & wanted
    longest, run = set(), set()
    for _, names in places:
        listed = wanted.intersection(names)
        run = run | listed if listed else set()
        if len(run) > len(longest):
            longest = run
    return len(wanted), len(present), len(longest)


def main(arguments):
    if arguments[:1] in (["--coverage"], ["--check"]) and len(arguments) == 3:
        listed, present, together = coverage(*arguments[1:])
        print(f"link order: {present:,} of the {listed:,} functions listed are in this build, {together:,} of them side by side")
        return 1 if arguments[0] == "--check" and 2 * together < listed else 0
    if len(arguments) < 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 64
    binary, outputs = arguments[0], arguments[1:]
    mangled, demangled = symbols(binary)
    ran = set()
    for output in outputs:
        ran |= executed(output)
    sections = set()
    for name in ran:
        if name in mangled:
            sections.add(name)
        else:
            sections.update(demangled.get(name, ()))
    # gold reads each line as a glob: no mangled name has *, ? or [, so each matches only itself.
    for name in sorted(sections):
        print(f".text.{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
