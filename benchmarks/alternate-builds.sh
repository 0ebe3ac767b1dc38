#!/usr/bin/env bash
# Runs two builds of mirror in turn, as MIRROR_WRAPPER of benchmarks/throughput.sh, so that a
# change is measured within one command: on this VM the same build's time drifts by a third from
# hour to hour, more than most changes. Each run's wall and CPU time (and peak RSS, when timed by
# /usr/bin/time) go to ALTERNATE_LOG, one line a run; benchmarks/alternate-summary.py sums it up.
#
#   ALTERNATE_A=/tmp/mirror.old ALTERNATE_B=.build/release-build/release/mirror ALTERNATE_LOG=/tmp/ab.log \
#       MIRROR_WRAPPER=benchmarks/alternate-builds.sh benchmarks/throughput.sh --rounds=20 --tools=mirror small
#   benchmarks/alternate-summary.py /tmp/ab.log
#
# Each round of the workload runs the next build of the two. The rerun workload's second run is
# too short for that (10 ms of `time`'s resolution is a tenth of it): with ALTERNATE_RERUNS=N, the
# first run of the workload is B's, and its rerun becomes N reruns of each build in turn over the
# same mirror, each timed by `perf stat -e task-clock` (to the microsecond) when perf is there.
#
#   ALTERNATE_RERUNS=30 ... benchmarks/throughput.sh --rounds=1 --tools=mirror rerun
#
# ALTERNATE_RSS=1 times those reruns with /usr/bin/time instead, for their peak RSS.
set -euo pipefail
shift # the build throughput.sh made: ALTERNATE_A and ALTERNATE_B run instead
: "${ALTERNATE_A:?the first build to run (a mirror binary)}" "${ALTERNATE_B:?the second build to run}"
log=${ALTERNATE_LOG:-alternate.log}
counter="$log.count"
count=$(cat "$counter" 2>/dev/null || echo 0)
echo $((count + 1)) > "$counter"

# run LABEL BINARY ARGS...: one timed run, its line appended to the log; returns its status.
run() {
    local label=$1 binary=$2
    shift 2
    if command -v perf >/dev/null && [ -n "${ALTERNATE_RERUNS:-}" ] && [ -z "${ALTERNATE_RSS:-}" ]; then
        local started ended status=0 measured
        measured=$(mktemp)
        started=$(date +%s%N)
        perf stat -x, -e task-clock -o "$measured" "$binary" "$@" || status=$?
        ended=$(date +%s%N)
        # label, wall s, CPU s (task-clock is in ms)
        awk -F, -v label="$label" -v wall="$(( (ended - started) / 1000 ))" \
            '/task-clock/ { printf "%s %.6f %.6f\n", label, wall / 1e6, $1 / 1000 }' "$measured" >> "$log"
        rm -f "$measured"
        return $status
    fi
    # label, wall s, CPU s, peak RSS KiB
    /usr/bin/time -a -o "$log" -f "$label %e %U+%S %M" "$binary" "$@"
}

if [ -z "${ALTERNATE_RERUNS:-}" ]; then
    if ((count % 2 == 0)); then run A "$ALTERNATE_A" "$@"; else run B "$ALTERNATE_B" "$@"; fi
    exit
fi
# The rerun workload: its first run makes the mirror, B's way; its rerun is the alternation.
((count == 0)) && exec "$ALTERNATE_B" "$@"
status=0
for ((round = 0; round < ALTERNATE_RERUNS; round++)); do
    run A "$ALTERNATE_A" "$@" || status=$?
    run B "$ALTERNATE_B" "$@" || status=$?
done
exit $status
