#!/usr/bin/env bash
# How a tag's throughput grows with the workers that share it through PostgreSQL, against a CDN
# that limits each connection (the fixture server's --media-throttle): 1, 2 and 4 `mirror`
# processes on one directory and one database, each with --concurrency 2; then 4 workers held to
# 4 connections in all by --cluster-max-per-host; beside them curl --parallel fetching the same
# files over 2, 4 and 8 connections, the most those connection counts can give.
# Then what each file costs the database: many small files at full speed, 1 and 4 workers, over
# plain TCP and over TLS (sslmode=verify-full, a certificate made for the run), with the
# PostgreSQL transactions per file; MIRROR_BIN=path runs another build (an older commit's, to
# compare the commit-time fencing check).
# Loopback only; a PostgreSQL of its own in a temporary directory (Debian's postgresql package).
#
#   benchmarks/workers.sh            # 60 images of 2 MiB, 1 MiB/s per connection; 400 of 16 KiB
#   benchmarks/workers.sh --smoke    # seconds-long, tiny sizes
#   benchmarks/workers.sh --per-file # only the small files' runs
set -euo pipefail
cd "$(dirname "$0")/.."
images=60 bytes=$((2 << 20)) rate=$((1 << 20)) configuration=release small=400
if [ "${1:-}" = "--smoke" ]; then images=8 bytes=65536 rate=$((256 << 10)) configuration=debug small=20; fi
per_file_only=false
if [ "${1:-}" = "--per-file" ]; then per_file_only=true; fi
scripts/setup
for tool in jq bc curl openssl; do command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 69; }; done
flags=(-c debug)
if [ "$configuration" = release ]; then . scripts/release-flags && flags=("${release_flags[@]}"); fi
swift build "${flags[@]}" --product fixture-server >&2
swift build "${flags[@]}" --product mirror >&2
swift build "${flags[@]}" --product mirror-postgresql >&2
bin=$(swift build "${flags[@]}" --show-bin-path)
mirror_bin=${MIRROR_BIN:-$bin/mirror}
pg=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)

work=$(mktemp -d)
chmod 755 "$work"
server="" postmaster="" fast_server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null
    [ -n "$fast_server" ] && kill "$fast_server" 2>/dev/null
    [ -n "$postmaster" ] && kill -QUIT "$postmaster" 2>/dev/null && wait "$postmaster" 2>/dev/null
    rm -rf "$work"
    return 0
}
trap cleanup EXIT
echo fixture > "$work/client-id"

# PostgreSQL refuses to run as root: as root, it runs as Debian's postgres user.
as_postgres=()
if [ "$(id -u)" -eq 0 ]; then
    as_postgres=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    mkdir "$work/pg" && chown postgres:postgres "$work/pg"
else
    mkdir "$work/pg"
fi
"${as_postgres[@]}" "$pg/initdb" -D "$work/pg/data" -A trust -U mirror --no-sync -E UTF8 --locale C >/dev/null
# A certificate for 127.0.0.1, made for this run: the TLS runs check it (verify-full).
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$work/pg/server.key" -out "$work/pg/server.crt" 2>/dev/null
chmod 600 "$work/pg/server.key"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$work/pg/server.key" "$work/pg/server.crt"
pg_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_postgres[@]}" "$pg/postgres" -D "$work/pg/data" -p "$pg_port" -k "$work/pg" -c listen_addresses=127.0.0.1 \
    -c fsync=off -c synchronous_commit=off \
    -c ssl=on -c ssl_cert_file="$work/pg/server.crt" -c ssl_key_file="$work/pg/server.key" >"$work/pg.log" 2>&1 &
postmaster=$!
for _ in $(seq 100); do "$pg/pg_isready" -q -h 127.0.0.1 -p "$pg_port" -U mirror -d postgres && break; sleep 0.1; done

"$bin/fixture-server" --fixtures Fixtures --url-file "$work/url" --media-throttle "$rate" \
    --generated-tag "shared=1x$images:0:1:$bytes" >/dev/null &
server=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
base=$(cat "$work/url")
media_bytes() { curl -s "$base/_fixture/stats" | jq '[.paths | to_entries[] | select(.key | startswith("/3/") | not) | .value.bodyBytes] | add // 0'; }
media_requests() { curl -s "$base/_fixture/stats" | jq '[.paths | to_entries[] | select(.key | startswith("/3/") | not) | .value.requests] | add // 0'; }

# The files, for curl: the API's one page lists every image.
curl -s -H 'Authorization: Client-ID fixture' "$base/3/gallery/t/shared/time/all/0" \
    | jq -r --arg base "$base" '.data.items[] | "\($base)/\(.id).jpg\n\($base)/\(.id)m.jpg"' > "$work/urls"
files=$(wc -l < "$work/urls")

echo "mirror workers sharing one tag through PostgreSQL: $images images of $bytes bytes and their thumbnails ($files files),"
echo "each connection held to $rate bytes/s; $(date -u +%F), $(nproc) cores, $configuration build"
printf '%-44s %8s %10s %9s %8s %s\n' run seconds MB/s requests ratio exits
first=""
run_workers() { # label workers [extra options...]
    local label=$1 count=$2
    shift 2
    local db="w$RANDOM$RANDOM"
    "$pg/createdb" -h 127.0.0.1 -p "$pg_port" -U mirror "$db"
    rm -rf "$work/out"
    local before_bytes before_requests start
    before_bytes=$(media_bytes) before_requests=$(media_requests)
    start=$(date +%s.%N)
    local pids=()
    for _ in $(seq "$count"); do
        "$mirror_bin" shared --out "$work/out" --client-id-file "$work/client-id" --api-base "$base" --media-base "$base" \
            --state "postgresql://mirror@127.0.0.1:$pg_port/$db" --concurrency 2 --quiet "$@" &
        pids+=($!)
    done
    local exits=""
    for pid in "${pids[@]}"; do
        set +e; wait "$pid"; exits+="$? "; set -e
    done
    report "$label" "$start" "$before_bytes" "$before_requests" "$exits"
    local got
    got=$(find "$work/out/full" "$work/out/preview" -type f | wc -l)
    [ "$got" -eq "$files" ] || { echo "only $got of $files files in the mirror" >&2; exit 1; }
}
run_curl() { # label connections
    rm -rf "$work/curl" && mkdir "$work/curl"
    local before_bytes before_requests start
    before_bytes=$(media_bytes) before_requests=$(media_requests)
    start=$(date +%s.%N)
    (cd "$work/curl" && curl -s --no-progress-meter --parallel --parallel-max "$2" --remote-name-all $(cat "$work/urls") 2>/dev/null)
    report "$1" "$start" "$before_bytes" "$before_requests" "0"
}
report() { # label start bytes-before requests-before exits
    local seconds bytes requests rate_mb ratio
    seconds=$(echo "$(date +%s.%N) - $2" | bc)
    bytes=$(( $(media_bytes) - $3 ))
    requests=$(( $(media_requests) - $4 ))
    rate_mb=$(echo "scale=2; $bytes / $seconds / 1048576" | bc)
    [ -z "$first" ] && first=$rate_mb
    ratio=$(echo "scale=2; $rate_mb / $first" | bc)
    printf '%-44s %8.2f %10s %9d %7sx %s\n' "$1" "$seconds" "$rate_mb" "$requests" "$ratio" "$5"
}

if ! $per_file_only; then
    run_workers "mirror, 1 worker x 2 connections" 1
    run_workers "mirror, 2 workers x 2 connections" 2
    run_workers "mirror, 4 workers x 2 connections" 4
    run_workers "mirror, 4 workers, --cluster-max-per-host 4" 4 --cluster-max-per-host 4
    run_curl "curl --parallel, 2 connections" 2
    run_curl "curl --parallel, 4 connections" 4
    run_curl "curl --parallel, 8 connections" 8
fi

# What a file costs the database: small files at full speed, so the per-file round trips are
# what the time is made of.
"$bin/fixture-server" --fixtures Fixtures --url-file "$work/fast-url" --generated-tag "small=1x$small:0:1:16384" >/dev/null &
fast_server=$!
for _ in $(seq 100); do [ -s "$work/fast-url" ] && break; sleep 0.05; done
fast=$(cat "$work/fast-url")
small_files=$((small * 2))
echo
echo "per file: $small images of 16 KiB and their thumbnails ($small_files files) at full speed, --concurrency 4 per worker"
printf '%-44s %8s %12s %14s %s\n' run seconds "ms/file" "xacts/file" exits
run_small() { # label workers query
    local label=$1 count=$2 query=$3
    local db="s$RANDOM$RANDOM"
    "$pg/createdb" -h 127.0.0.1 -p "$pg_port" -U mirror "$db"
    rm -rf "$work/small"
    local start pids=() exits="" seconds xacts
    start=$(date +%s.%N)
    for _ in $(seq "$count"); do
        "$mirror_bin" small --out "$work/small" --client-id-file "$work/client-id" --api-base "$fast" --media-base "$fast" \
            --state "postgresql://mirror@127.0.0.1:$pg_port/$db$query" --concurrency 4 --quiet &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        set +e; wait "$pid"; exits+="$? "; set -e
    done
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    xacts=$("$pg/psql" -h 127.0.0.1 -p "$pg_port" -U mirror -d postgres -At \
        -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$db'")
    printf '%-44s %8.2f %12.2f %14.2f %s\n' "$label" "$seconds" "$(echo "scale=4; $seconds * 1000 / $small_files" | bc)" \
        "$(echo "scale=4; $xacts / $small_files" | bc)" "$exits"
    local got
    got=$(find "$work/small/full" "$work/small/preview" -type f | wc -l)
    [ "$got" -eq "$small_files" ] || { echo "only $got of $small_files files in the mirror" >&2; exit 1; }
}
tls="?sslmode=verify-full&sslrootcert=$work/pg/server.crt"
run_small "mirror, 1 worker, plain TCP" 1 "?sslmode=disable"
run_small "mirror, 1 worker, TLS (verify-full)" 1 "$tls"
run_small "mirror, 4 workers, plain TCP" 4 "?sslmode=disable"
run_small "mirror, 4 workers, TLS (verify-full)" 4 "$tls"
