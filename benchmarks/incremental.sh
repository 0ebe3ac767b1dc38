#!/usr/bin/env bash
# A tag larger than one hour of Imgur's API budget, mirrored by hourly runs of the real command:
# how many runs it takes, the API calls and files of each, and whether any album is asked for twice.
# Loopback only: the bundled fixture server (release build) generates the tag and holds a budget
# that refills only when this script says an hour has passed.
#
#   benchmarks/incremental.sh                 # the issue's shape: 24 pages x 12, every 2nd an album of 3, 40 calls/hour
#   benchmarks/incremental.sh 182x60:5:3 500  # the real cats tag's shape: 10,920 entries, 500 calls/hour
#   MIRROR=/path/to/older/mirror benchmarks/incremental.sh   # the same runs with another build
set -euo pipefail
cd "$(dirname "$0")/.."
shape=${1:-24x12:2:3:2048}
budget=${2:-40}
max_runs=${3:-20}
scripts/setup
missing=()
for tool in jq bc curl; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq && $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
. scripts/release-flags
swift build "${release_flags[@]}" --product fixture-server >&2
swift build "${release_flags[@]}" --product mirror >&2
bin=$(swift build "${release_flags[@]}" --show-bin-path)
mirror=${MIRROR:-$bin/mirror}
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
echo fixture > "$work/client-id"

"$bin/fixture-server" --fixtures Fixtures --url-file "$work/url" --generated-tag "big=$shape" \
    --api-budget "$budget" >/dev/null &
server=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
base=$(cat "$work/url")
stats() { curl -s "$base/_fixture/stats"; }
api_calls() { stats | jq '[.paths | to_entries[] | select(.key | startswith("/3/")) | .value.requests] | add // 0'; }
files() { find "$work/out/full" "$work/out/preview" -type f 2>/dev/null | wc -l; }

echo "tag shape $shape, $budget API calls per hour; $(date -u +%F), $(nproc) cores"
printf '%-4s %-6s %9s %8s %8s  %s\n' run status api-calls files seconds summary
before=0
for run in $(seq "$max_runs"); do
    start=$(date +%s.%N)
    set +e
    # --max-wait 0: a real hourly reset is further away than any wait allowed; here it is "1 s".
    summary=$("$mirror" big --out "$work/out" --client-id-file "$work/client-id" \
        --api-base "$base" --media-base "$base" --concurrency 16 --max-wait 0 2>/dev/null)
    status=$?
    set -e
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    calls=$(api_calls)
    printf '%-4s %-6s %9d %8d %8.2f  %s\n' "$run" "$status" $((calls - before)) "$(files)" "$seconds" "$summary"
    before=$calls
    [ "$status" -eq 0 ] && break
    [ "$status" -ne 75 ] && { echo "unexpected exit status $status" >&2; exit 1; }
    curl -s "$base/_fixture/refill?calls=$budget" >/dev/null
    sleep 1.1  # the reset the last run saw has passed
done
twice=$(stats | jq '[.paths | to_entries[] | select(.key | test("^/3/album/")) | select(.value.requests > 1)] | length')
albums=$(stats | jq '[.paths | to_entries[] | select(.key | test("^/3/album/"))] | length')
echo "albums asked for: $albums, more than once: $twice"
"$mirror" status --out "$work/out" | sed -n '/^imgur tag/,$p'
