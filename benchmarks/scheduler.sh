#!/usr/bin/env bash
# Issue #4's scheduler figures: (a) a 50 MiB forced item submitted while 1,000 previews are queued,
# against the same item alone; (b) the scheduler's own cost for 100,000 items. Then curl --parallel
# on the same files as a peer: it has no forced tier, so the large file waits its turn in the queue.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup
. scripts/release-flags
swift build "${release_flags[@]}" --product scheduler-bench >&2
swift build "${release_flags[@]}" --product fixture-server >&2
bin=$(swift build "${release_flags[@]}" --show-bin-path)
"$bin/scheduler-bench" Fixtures

work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
media=(--media /forced.bin=$((50 << 20)))
for i in $(seq 0 999); do media+=(--media "/preview-$i.jpg=$((8192 + i * 37 % 24576))"); done
"$bin/fixture-server" --fixtures Fixtures --url-file "$work/url" "${media[@]}" >/dev/null &
server=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
base=$(cat "$work/url")
curl -s -o /dev/null "$base/forced.bin"  # let the server generate the content once

config() { # order: first or last
    : > "$work/list"
    [ "$1" = first ] && printf 'url = "%s/forced.bin"\noutput = "%s/out/forced.bin"\n' "$base" "$work" >> "$work/list"
    for i in $(seq 0 999); do printf 'url = "%s/preview-%d.jpg"\noutput = "%s/out/p%d.jpg"\n' "$base" "$i" "$work" "$i" >> "$work/list"; done
    [ "$1" = last ] && printf 'url = "%s/forced.bin"\noutput = "%s/out/forced.bin"\n' "$base" "$work" >> "$work/list"
    true
}
# Seconds from the start of a curl run until forced.bin is complete.
forced_done() { # curl arguments…
    rm -rf "$work/out"; mkdir -p "$work/out"
    local start; start=$(date +%s.%N)
    curl -s --fail "$@" -w '%{url_effective} %{time_total} %{time_starttransfer}\n' > "$work/times"
    local end; end=$(date +%s.%N)
    # curl reports each transfer's own time, not when it began; a file listed last begins when the
    # rest are done, so its completion is taken as the end of the run.
    echo "$start $end"
}
read -r s e < <(forced_done -o "$work/out/forced.bin" "$base/forced.bin")
alone=$(echo "$e - $s" | bc)
config last
read -r s e < <(forced_done -Z --parallel-max 6 -K "$work/list")
last=$(echo "$e - $s" | bc)
config first
forced_done -Z --parallel-max 6 -K "$work/list" >/dev/null
first=$(awk '/forced.bin/ {print $2}' "$work/times")
printf '(peer) curl 7.88 --parallel --parallel-max 6\n'
printf '    forced.bin alone                        %.3f s\n' "$alone"
printf '    listed after the 1,000 previews         %.3f s   ratio %.2f×\n' "$last" "$(echo "$last / $alone" | bc -l)"
printf '    listed first, sharing with 5 previews   %.3f s   ratio %.2f×\n' "$first" "$(echo "$first / $alone" | bc -l)"
