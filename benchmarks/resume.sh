#!/usr/bin/env bash
# Bytes a server sends to get one 64 MiB file across (1) a connection dropped at 50 % and
# (2) the client killed with SIGKILL at about 50 % and started again; mirror beside curl and wget.
# Loopback only: the bundled fixture server (release build) counts the body bytes it sends.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup
. scripts/release-flags
swift build "${release_flags[@]}" --product fixture-server >&2
swift build "${release_flags[@]}" --product mirror >&2
bin=$(swift build "${release_flags[@]}" --show-bin-path)
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

path=/B1gF1le.jpg
size=$((64 << 20))
echo fixture > "$work/client-id"

start_server() { # extra fixture-server arguments
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
    rm -f "$work/url"
    "$bin/fixture-server" --fixtures Fixtures --url-file "$work/url" "$@" >/dev/null &
    server=$!
    for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
    base=$(cat "$work/url")
}
sent() { curl -s "$base/_fixture/stats" | jq ".paths[\"$path\"].bodyBytes // 0"; }
expected_md5() { curl -sI "$base$path" | tr -d '\r' | awk -F'"' 'tolower($1) ~ /^etag/ {print $2}'; }
verdict() { # file
    [ -f "$1" ] && [ "$(md5sum < "$1" | cut -d' ' -f1)" = "$(expected_md5)" ] && echo identical || echo WRONG
}
row() { # tool scenario file
    local bytes; bytes=$(sent)
    printf '%-8s %-26s %12d %8s  %s\n' "$1" "$2" "$bytes" "$(echo "scale=3; $bytes / $size" | bc)" "$(verdict "$3")"
}
mirror_run() { "$bin/mirror" bigfile --out "$work/m" --client-id-file "$work/client-id" --quiet \
    --api-base "$base" --media-base "$base"; }
# A function run with & is a subshell: exec so that $! is mirror itself, the process to kill.
mirror_run_exec() { exec "$bin/mirror" bigfile --out "$work/m" --client-id-file "$work/client-id" --quiet \
    --api-base "$base" --media-base "$base"; }
wait_for_size() { # file-glob bytes
    for _ in $(seq 2000); do
        local n; n=$(stat -c %s $1 2>/dev/null | sort -n | tail -1 || true)
        [ -n "$n" ] && [ "$n" -ge "$2" ] && return 0
        sleep 0.01
    done
    return 1
}
kill_at_half() { # pid file-glob
    wait_for_size "$2" $((size / 2)); kill -9 "$1"; wait "$1" 2>/dev/null || true
}

printf '%-8s %-26s %12s %8s  %s\n' tool scenario "bytes sent" "× size" result
# 1. The server drops the connection at 50 %; each tool retries on its own.
for tool in mirror curl wget; do
    rm -rf "$work/m" "$work/out.bin"
    start_server --fault "$path=drop-after:$((size / 2))"
    case $tool in
        mirror) mirror_run; file="$work/m/full$path" ;;
        curl) curl -s --retry 3 --retry-all-errors --retry-delay 1 -C - -o "$work/out.bin" "$base$path" || true; file="$work/out.bin" ;;
        wget) wget -q --tries=3 -O "$work/out.bin" "$base$path" || true; file="$work/out.bin" ;;
    esac
    row "$tool" "drop at 50 %" "$file"
done
# 2. The client is killed with SIGKILL at about 50 % and run again (curl -C -, wget -c).
for tool in mirror curl wget; do
    rm -rf "$work/m" "$work/out.bin"
    start_server --fault "$path=throttle:$((32 << 20))"
    case $tool in
        mirror) mirror_run_exec & kill_at_half $! "$work/m/.mirror/partials/*.part"; mirror_run; file="$work/m/full$path" ;;
        curl) curl -s -o "$work/out.bin" "$base$path" & kill_at_half $! "$work/out.bin"
              curl -s -C - -o "$work/out.bin" "$base$path"; file="$work/out.bin" ;;
        wget) wget -q -O "$work/out.bin" "$base$path" & kill_at_half $! "$work/out.bin"
              wget -q -c -O "$work/out.bin" "$base$path"; file="$work/out.bin" ;;
    esac
    row "$tool" "SIGKILL at ~50 %, rerun" "$file"
done
# 3. As 2, but the file changes on the server before the rerun (new content, same size).
for tool in mirror curl wget; do
    rm -rf "$work/m" "$work/out.bin"
    start_server --fault "$path=throttle:$((32 << 20))"
    case $tool in
        mirror) mirror_run_exec & kill_at_half $! "$work/m/.mirror/partials/*.part" ;;
        curl) curl -s -o "$work/out.bin" "$base$path" & kill_at_half $! "$work/out.bin" ;;
        wget) wget -q -O "$work/out.bin" "$base$path" & kill_at_half $! "$work/out.bin" ;;
    esac
    curl -s "$base/_fixture/change?path=$path" >/dev/null
    case $tool in
        mirror) mirror_run || true; file="$work/m/full$path" ;;
        curl) curl -s -C - -o "$work/out.bin" "$base$path" || true; file="$work/out.bin" ;;
        wget) wget -q -c -O "$work/out.bin" "$base$path" || true; file="$work/out.bin" ;;
    esac
    row "$tool" "SIGKILL, changed, rerun" "$file"
done
