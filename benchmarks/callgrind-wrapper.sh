#!/usr/bin/env bash
# Counts the instructions of one mirror run with callgrind, as MIRROR_WRAPPER of
# benchmarks/throughput.sh (one round: valgrind runs it some 30 times slower):
#
#   MIRROR_WRAPPER=benchmarks/callgrind-wrapper.sh CALLGRIND_OUT=/tmp/small.cg \
#       benchmarks/throughput.sh --rounds=1 --tools=mirror small
#   callgrind_annotate --inclusive=yes /tmp/small.cg | swift demangle --simplified | less
#
# Debian 12's valgrind (3.19) cannot read the DWARF 5 line tables Swift writes and gives up on
# the binary, so it runs a copy without them: symbols stay, source lines go. Instruction counts
# are deterministic enough to compare two builds where wall and CPU time on this machine vary by
# a third between runs; inclusive costs of async functions are not meaningful (a task's later
# parts run from the executor, not from the caller), self costs and callers are.
#
# CALLGRIND_BINARY=/tmp/mirror.old counts another build (an older commit's) in the same workload.
# A workload of two runs (rerun) writes CALLGRIND_OUT twice: `%p` in it (valgrind's) keeps both.
set -euo pipefail
binary=${CALLGRIND_BINARY:-$1}
shift
command -v valgrind >/dev/null || { echo "callgrind-wrapper: valgrind is not installed (apt-get install valgrind)" >&2; exit 69; }
copy=$(mktemp)
trap 'rm -f "$copy"' EXIT
objcopy --strip-debug "$binary" "$copy"
chmod +x "$copy"
valgrind --tool=callgrind --callgrind-out-file="${CALLGRIND_OUT:-callgrind.out}" "$copy" "$@"
