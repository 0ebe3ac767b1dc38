#!/usr/bin/env bash
# Remakes scripts/link-order, the functions a run of mirror executes, which release builds put side
# by side (scripts/release-flags). Runs throughput.sh's small, dup and rerun workloads once each
# under callgrind (some minutes: valgrind runs mirror some 30 times slower), and `mirror feed` on the
# fixture server's feeds, and keeps every function of the binary that ran. Run it after a change
# that renames or adds much of what runs: throughput.sh prints how much of the list a build places.
#
#   benchmarks/link-order.sh && git diff --stat scripts/link-order
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "link-order: needs valgrind (apt-get install valgrind)" >&2; exit 69; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for workload in small dup rerun; do
    # %p: valgrind names each run's output by its pid, so a workload's first run and rerun both count.
    MIRROR_WRAPPER=benchmarks/callgrind-wrapper.sh CALLGRIND_OUT="$work/$workload.%p.cg" \
        benchmarks/throughput.sh --rounds=1 --tools=mirror "$workload" > "$work/$workload.log" 2>&1 \
        || { cat "$work/$workload.log" >&2; exit 1; }
done
. scripts/release-flags
bin=$(swift build "${release_flags[@]}" --show-bin-path)
# The feed parser's code, which the tag workloads never reach.
swift build --product fixture-server >&2
"$(swift build --show-bin-path)/fixture-server" --fixtures Fixtures --url-file "$work/url" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.1; done
[ -s "$work/url" ] || { echo "link-order: the fixture server did not start" >&2; exit 1; }
for feed in podcast.rss docsets.atom; do
    CALLGRIND_OUT="$work/feed.%p.cg" benchmarks/callgrind-wrapper.sh "$bin/mirror" feed "$(cat "$work/url")/feeds/$feed" \
        --out "$work/feeds" --quiet >> "$work/feed.log" 2>&1 || { cat "$work/feed.log" >&2; exit 1; }
done
python3 benchmarks/link-order.py "$bin/mirror" "$work"/*.cg > "$work/link-order"
[ -s "$work/link-order" ] || { echo "link-order: no function of $bin/mirror ran" >&2; exit 1; }
mv "$work/link-order" scripts/link-order
echo "scripts/link-order: $(wc -l < scripts/link-order) functions"
