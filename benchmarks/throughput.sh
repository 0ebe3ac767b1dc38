#!/usr/bin/env bash
# mirror beside the tools users would pick instead (curl --parallel, aria2c, wget), on the same
# files in one run: nginx serves a generated, Imgur-shaped static tag on 127.0.0.1 (API pages at
# their paths, full-size files and thumbnails), optionally through a latency-adding proxy of our
# own. Each tool downloads into an empty directory; wall time is the median of the rounds, CPU is
# user + system, RSS the peak; requests and bytes come from nginx's access log.
#
#   benchmarks/throughput.sh                    # every workload, 3 rounds, the shipped release build
#   benchmarks/throughput.sh small rtt          # some of them
#   benchmarks/throughput.sh --smoke            # seconds-long, tiny sizes, 1 round (CI)
#   benchmarks/throughput.sh --tools=mirror,curl small   # only these tools side by side (rerun,
#                                                        # tag100k and three100k run mirror alone)
#
# floor, floor+steps and floor+grouped (small and dup, only when named in --tools) are
# benchmarks/floor.c: libcurl's multi interface writing each file as curl does, with mirror's file
# steps (durability and a single-step name: an fdatasync each), and with those steps' syncs
# grouped (one syncfs for all files waiting). No tool users pick: what a tool with mirror's
# guarantees and nothing else to do costs; "mirror / floor+steps" is the part that is mirror's own.
#
# mirror+warc is mirror archiving every exchange (--warc), beside its plain run and wget's
# --warc-file (wget+warc) on small, rtt and large. Workloads: small (1,000 images: 50 KiB full-size + 8 KiB thumbnail), rtt (300 images of
# 200 KiB through a 50 ms round trip), large (4 x 256 MiB), dup (30 % duplicate URLs: requests
# must equal unique URLs), rerun (an unchanged second run of 10,000 items: < 1 s, no media requests),
# and, only when named, tag100k (a first run and an unchanged rerun of 100,000 images of 1 KiB +
# 512 B, some two minutes: peak RSS must not grow with the tag) and three100k (three tags in one
# run, their sources submitting at once: 3 x 1,000 images, then 3 x 33,334, 1 KiB + 512 B; peak
# RSS must not grow with them).
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=0
rounds=3
workloads=()
only_tools=""
for argument in "$@"; do
    case "$argument" in
        --smoke) smoke=1; rounds=1 ;;
        --rounds=*) rounds=${argument#--rounds=} ;;
        --tools=*) only_tools=",${argument#--tools=}," ;;
        small|rtt|large|dup|rerun|tag100k|three100k) workloads+=("$argument") ;;
        *) echo "usage: $0 [--smoke] [--rounds=N] [--tools=T,...] [small|rtt|large|dup|rerun|tag100k|three100k ...]" >&2; exit 64 ;;
    esac
done
((${#workloads[@]})) || workloads=(small rtt large dup rerun)

scripts/setup
missing=()
for tool in aria2c:aria2 wget:wget curl:curl bc:bc python3:python3; do
    command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
# `time` is also a shell keyword, so `command -v` cannot tell whether the program is there.
[ -x /usr/bin/time ] || missing+=(time)
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
floor_wanted=0
[[ "$only_tools" == *,floor* ]] && floor_wanted=1

# The smoke run only shows the script works end to end: a debug build is enough and quicker.
# Otherwise the build users run, with scripts/install's flags (the Swift runtime linked in, the
# functions runs execute side by side).
if ((smoke)); then
    flags=(-c debug) build="debug build"
else
    . scripts/release-flags
    flags=("${release_flags[@]}") build="release build, Swift runtime linked in"
    [ -z "$release_link_order" ] || build="$build, functions in link order"
fi
swift build "${flags[@]}" --product mirror >&2
bin=$(swift build "${flags[@]}" --show-bin-path)
((smoke)) || [ -z "$release_link_order" ] || python3 benchmarks/link-order.py --coverage "$bin/mirror" "$release_link_order"

work=$(mktemp -d)
pids=()
loop_image=""
cleanup() {
    set +e  # a failing step here must not turn a finished run into a failed one
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
    if [ -f "$work/nginx.pid" ]; then
        local nginx_pid
        nginx_pid=$(cat "$work/nginx.pid")
        kill "$nginx_pid" 2>/dev/null
        # Its logs are open on the file system about to be unmounted: wait until it has let go.
        for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
    fi
    if [ -n "$loop_image" ]; then
        umount "$work" 2>/dev/null || umount -l "$work"
        rm -f "$loop_image"
    fi
    rm -rf "$work"
    return 0
}
trap cleanup EXIT
# Every tool writes to a fresh ext4 (Debian's defaults, journal included) when we may mount one.
# A long-lived file system gets slow at creating inodes in ways that have nothing to do with the
# tools: this machine's root (ext4 without a journal, much churned) takes 0.4–0.7 ms per file
# created against 0.05 ms on a fresh one, and whichever tool ran after a deletion paid most.
filesystem="$(df -T "$work" | awk 'NR == 2 { print $2 }') at $(df "$work" | awk 'NR == 2 { print $6 }')"
if [ "$(id -u)" -eq 0 ] && [ -z "${BENCH_KEEP_FS:-}" ] && command -v mkfs.ext4 >/dev/null; then
    loop_image="$work.img"
    truncate -s 8G "$loop_image"
    if mkfs.ext4 -q -F "$loop_image" && mount -o loop "$loop_image" "$work" 2>/dev/null; then
        filesystem="fresh ext4 on a loop device"
    else
        rm -f "$loop_image"
        loop_image=""
    fi
fi
chmod 755 "$work"
if ((floor_wanted)); then
    # libcurl's headers come with the package mirror builds against (scripts/setup).
    cc -O2 -pthread -o "$work/floor" benchmarks/floor.c -lcurl
fi
echo fixture > "$work/client-id"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

port=$(free_port)
mkdir -p "$work/www" "$work/tmp"
cat > "$work/nginx.conf" <<EOF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
    log_format bench '\$request_uri \$status \$body_bytes_sent';
    access_log $work/access.log bench;
    client_body_temp_path $work/tmp/body;
    proxy_temp_path $work/tmp/proxy;
    fastcgi_temp_path $work/tmp/fastcgi;
    uwsgi_temp_path $work/tmp/uwsgi;
    scgi_temp_path $work/tmp/scgi;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120;
    types { image/jpeg jpg; }
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$port;
        root $work/www;
        location /3/ { default_type application/json; }
    }
}
EOF
"$nginx_bin" -c "$work/nginx.conf" -p "$work" 2>/dev/null
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
direct="http://127.0.0.1:$port"

proxy_port=$(free_port)
python3 benchmarks/latency-proxy.py "$proxy_port" "$port" 50 &
pids+=($!)
delayed="http://127.0.0.1:$proxy_port"

# make TAG IMAGES FULL THUMB [DUP%]: a fresh tree for TAG.
make_tree() {
    rm -rf "$work/www"/*
    python3 benchmarks/make-tag-tree.py "$work/www" "$@" >/dev/null
    chmod -R a+rX "$work/www"
}

# One run of one tool into an empty directory: "wall cpu rss_kib requests media_requests bytes".
measure() { # tool tag base
    local tool=$1 tag=$2 base=$3 out="$work/out-$1"
    rm -rf "$out"
    # Every run starts from the same memory: what the runs before wrote is synced and dropped from
    # the page cache, and the served files are read back in. Left in place, the pages of earlier
    # runs made whichever tool came next pay to reclaim them, in proportion to what it writes
    # (mirror+warc, which writes every byte twice, ran up to twice as long after other runs).
    if [ "$(id -u)" -eq 0 ]; then
        sync
        { echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null || true
        find "$work/www" -type f -exec cat {} + > /dev/null
    fi
    mkdir -p "$out"
    : > "$work/access.log"
    case "$tool" in
        # MIRROR_WRAPPER="perf record -g -o /tmp/perf.data" profiles mirror's runs in place.
        mirror|mirror+warc)
                command=(${MIRROR_WRAPPER:-} "$bin/mirror" "$tag" --out "$out" --client-id-file "$work/client-id" --quiet
                         --api-base "$base" --media-base "$base" --concurrency 16)
                # mirror+warc: the same run archiving every exchange as WARC (--warc), anew each time.
                if [ "$tool" = mirror+warc ]; then
                    rm -rf "$work/warc"
                    command+=(--warc "$work/warc")
                fi ;;
        # floor: curl's network with mirror's file steps and nothing else (benchmarks/floor.c).
        floor|floor+steps|floor+grouped)
              sort -u "$work/www/urls.txt" > "$work/unique-urls.txt"
              local way=plain
              [ "$tool" = floor ] || way=${tool#floor+}
              # FLOOR_WRAPPER profiles these runs as MIRROR_WRAPPER does mirror's.
              command=(${FLOOR_WRAPPER:-} "$work/floor" "$way" "$base" "$work/unique-urls.txt" "$out" 16) ;;
        curl|curl+sync) sed "s|^\(.*\)$|url = \"$base\1\"\noutput = \"$out\1\"|" "$work/www/urls.txt" > "$work/curl.cfg"
              command=(curl --parallel --parallel-max 16 -s -S -f -K "$work/curl.cfg")
              # curl+sync: then its files written to disk, what mirror pays for (it syncs each
              # file's data before giving it its name) and curl alone leaves in the page cache.
              [ "$tool" = curl ] || command=(sh -c '"$@" && sync -f "$0"' "$out" "${command[@]}") ;;
        aria2c) sed "s|^/\(.*\)$|$base/\1\n  out=\1|" "$work/www/urls.txt" > "$work/aria2.txt"
                command=(aria2c -j16 -x1 -q -i "$work/aria2.txt" -d "$out" --allow-overwrite=true
                         --auto-file-renaming=false --file-allocation=none) ;;
        wget|wget+warc) sed "s|^|$base|" "$work/www/urls.txt" > "$work/wget.txt"
              command=(wget -q -nv -i "$work/wget.txt" -P "$out")
              # wget+warc: what users archive with today (`--warc-file`), beside mirror+warc.
              if [ "$tool" = wget+warc ]; then
                  rm -rf "$work/warc"
                  mkdir -p "$work/warc"
                  command+=(--warc-file="$work/warc/wget")
              fi ;;
    esac
    local status=0
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" "${command[@]}" >/dev/null 2>"$work/$tool.stderr" || status=$?
    sleep 0.2  # nginx writes its log line after the response
    read -r wall user system rss < <(tail -1 "$work/time")
    if [[ "$tool" == floor* ]]; then
        local files
        files=$(find "$out" -type f | wc -l)
        [ "$status" -eq 0 ] || echo "$tag: $tool exited with $status: $(head -3 "$work/$tool.stderr")" >> "$work/problems"
        [ "$files" -eq "$(wc -l < "$work/unique-urls.txt")" ] || echo "$tag: $tool saved $files files" >> "$work/problems"
    fi
    if [ "$tool" = mirror ] || [ "$tool" = mirror+warc ]; then
        # A figure for a run that failed, or left files out, would be no figure at all.
        local want got
        want=$(sort -u "$work/www/urls.txt" | wc -l)
        got=$(find "$out" -path "$out/.mirror" -prune -o -type f -print | wc -l)
        [ "$status" -eq 0 ] || echo "$tag: $tool exited with $status: $(head -3 "$work/$tool.stderr")" >> "$work/problems"
        if [ -z "${MIRROR_WRAPPER:-}" ] && [ "$tool" = mirror+warc ] && ! ls "$work/warc"/*.warc.gz >/dev/null 2>&1; then
            echo "$tag: mirror+warc wrote no WARC file" >> "$work/problems"
        fi
        [ "$got" -eq "$want" ] || echo "$tag: mirror saved $got files of $want" >> "$work/problems"
    fi
    local requests media bytes
    requests=$(wc -l < "$work/access.log")
    media=$(grep -vc '^/3/' "$work/access.log" || true)
    bytes=$(awk '{ total += $3 } END { print total + 0 }' "$work/access.log")
    # Only mirror's directory is read again (a rerun): the others' would fill the loop device.
    [ "$tool" = mirror ] || rm -rf "$out" "$work/warc"
    echo "$wall $(echo "$user + $system" | bc) $rss $requests $media $bytes"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# compare TAG BASE TOOLS...: rounds of every tool, interleaved; one table row per tool.
compare() {
    local tag=$1 base=$2
    shift 2
    local tools=() tool round
    # A workload's rows and ratios are its own: no tool's results of the workload before remain.
    rm -f "$work"/results-*
    for tool in "$@"; do
        # The floors run only when named: they are measures of mirror, not tools users pick.
        if [ -z "$only_tools" ]; then
            [[ "$tool" == floor* ]] || tools+=("$tool")
        elif [[ "$only_tools" == *",$tool,"* ]]; then
            tools+=("$tool")
        fi
    done
    ((${#tools[@]})) || return 0
    for tool in "${tools[@]}"; do : > "$work/results-$tool"; done
    for round in $(seq "$rounds"); do
        for tool in "${tools[@]}"; do measure "$tool" "$tag" "$base" >> "$work/results-$tool"; done
    done
    printf '| %-8s | %9s | %9s | %8s | %8s | %12s |\n' tool "wall s" "CPU s" "RSS MiB" requests "bytes"
    printf '|---|---:|---:|---:|---:|---:|\n'
    local best="" mirror_wall=""
    for tool in "${tools[@]}"; do
        local wall cpu rss requests bytes
        wall=$(cut -d' ' -f1 "$work/results-$tool" | median)
        cpu=$(cut -d' ' -f2 "$work/results-$tool" | median)
        rss=$(cut -d' ' -f3 "$work/results-$tool" | sort -n | tail -1)
        requests=$(tail -1 "$work/results-$tool" | cut -d' ' -f5)
        bytes=$(tail -1 "$work/results-$tool" | cut -d' ' -f6)
        printf '| %-8s | %9.2f | %9.2f | %8.1f | %8d | %12d |\n' "$tool" "$wall" "$cpu" "$(echo "$rss / 1024" | bc -l)" "$requests" "$bytes"
        if [ "$tool" = mirror ]; then
            mirror_wall=$wall
        elif [ "$tool" = mirror+warc ] || [ "$tool" = wget+warc ] || [[ "$tool" == floor* ]]; then
            :
        elif [ -z "$best" ] || [ "$(echo "$wall < $best" | bc)" = 1 ]; then
            best=$wall
        fi
    done
    [ -n "$best" ] && [ -n "$mirror_wall" ] && printf 'mirror / best peer (wall): %.2f\n' "$(echo "$mirror_wall / $best" | bc -l)"
    # The machine's speed drifts within minutes: the ratio of each round's own runs, taken side
    # by side, is the figure to trust; their median and spread. What archiving costs is each
    # round's WARC run against its plain run.
    local column
    for column in 1:wall 2:CPU 3:RSS; do per_round mirror+warc mirror "$column"; done
    per_round mirror+warc wget+warc 1:wall
    per_round mirror curl 1:wall
    for column in 1:wall 2:CPU; do
        per_round floor+steps curl "$column"
        per_round floor+grouped curl "$column"
        per_round mirror floor+steps "$column"
    done
}

# per_round TOOL OTHER COLUMN:NAME: the ratio of TOOL's figure in COLUMN to OTHER's, round by
# round, when both ran: its median and range.
per_round() {
    local tool=$1 other=$2 column=${3%%:*} name=${3#*:} ratios
    [ -s "$work/results-$tool" ] && [ -s "$work/results-$other" ] || return 0
    ratios=$(paste -d' ' <(cut -d' ' -f"$column" "$work/results-$tool") <(cut -d' ' -f"$column" "$work/results-$other") \
        | awk '$2 > 0 { printf "%.2f\n", $1 / $2 }' | sort -n)
    printf '%s / %s per round (%s): median %s, from %s to %s\n' "$tool" "$other" "$name" \
        "$(median <<< "$ratios")" "$(head -1 <<< "$ratios")" "$(tail -1 <<< "$ratios")"
}

scale() { ((smoke)) && echo "$2" || echo "$1"; }
# first_then_rerun TAG IMAGES: a first run of a tag of IMAGES (1 KiB + 512 B each), then an
# unchanged second run into the same directory; a line of figures for each.
first_then_rerun() {
    local tag=$1 images=$2 status=0 wall cpu rss user system media
    make_tree "$tag" "$images" 1024 512
    read -r wall cpu rss _ < <(measure mirror "$tag" "$direct")
    printf 'first run: %.2f s wall, %.2f s CPU, %.1f MiB RSS\n' "$wall" "$cpu" "$(echo "$rss / 1024" | bc -l)"
    # The same directory again: nothing changed, so nothing but the API's head is asked for.
    : > "$work/access.log"
    # MIRROR_WRAPPER profiles this run too.
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" ${MIRROR_WRAPPER:-} "$bin/mirror" "$tag" --out "$work/out-mirror" \
        --client-id-file "$work/client-id" --quiet --api-base "$direct" --media-base "$direct" >/dev/null \
        2>"$work/mirror.stderr" || status=$?
    [ "$status" -eq 0 ] || echo "$tag: the rerun exited with $status: $(head -3 "$work/mirror.stderr")" >> "$work/problems"
    sleep 0.2
    read -r wall user system rss < <(tail -1 "$work/time")
    media=$(grep -vc '^/3/' "$work/access.log" || true)
    printf 'rerun: %.2f s wall, %.2f s CPU, %.1f MiB RSS, %d requests (%d for media)\n' "$wall" \
        "$(echo "$user + $system" | bc)" "$(echo "$rss / 1024" | bc -l)" "$(wc -l < "$work/access.log")" "$media"
    [ "$media" -eq 0 ] || echo "$tag: an unchanged rerun asked for $media media files" >> "$work/problems"
}
# Three tags of IMAGES each, mirrored by one run whose three sources submit at once.
three_sources() { # images
    local per=$1 status=0 wall user system rss got
    rm -rf "$work/www"/* "$work/out-three"
    : > "$work/all-urls"
    for tag in first:B second:C third:E; do
        python3 benchmarks/make-tag-tree.py "$work/www" "${tag%%:*}" "$per" 1024 512 0 "${tag##*:}" >/dev/null
        cat "$work/www/urls.txt" >> "$work/all-urls"
    done
    chmod -R a+rX "$work/www"
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$bin/mirror" first second third --out "$work/out-three" \
        --client-id-file "$work/client-id" --quiet --api-base "$direct" --media-base "$direct" --concurrency 16 >/dev/null \
        2>"$work/mirror.stderr" || status=$?
    [ "$status" -eq 0 ] || echo "three100k: mirror exited with $status: $(head -3 "$work/mirror.stderr")" >> "$work/problems"
    got=$(find "$work/out-three" -path "$work/out-three/.mirror" -prune -o -type f -print | wc -l)
    [ "$got" -eq "$(wc -l < "$work/all-urls")" ] || echo "three100k: mirror saved $got files of $(wc -l < "$work/all-urls")" >> "$work/problems"
    read -r wall user system rss < <(tail -1 "$work/time")
    printf '3 x %d images: %.2f s wall, %.2f s CPU, %.1f MiB RSS\n' "$per" "$wall" "$(echo "$user + $system" | bc)" \
        "$(echo "$rss / 1024" | bc -l)"
}
echo "# $(date -u +%F), $(nproc) cores, $(uname -r), $build, $rounds round(s), files on $filesystem; nginx $($nginx_bin -v 2>&1 | cut -d/ -f2), curl $(curl --version | head -1 | cut -d' ' -f2), aria2 $(aria2c --version | head -1 | cut -d' ' -f3), wget $(wget --version | head -1 | cut -d' ' -f3)"
for workload in "${workloads[@]}"; do
    case "$workload" in
        small)
            images=$(scale 1000 40)
            make_tree small "$images" $((50 << 10)) $((8 << 10))
            echo; echo "## small: $images images, 50 KiB + 8 KiB, loopback"
            compare small "$direct" mirror mirror+warc curl curl+sync aria2c wget wget+warc floor floor+steps floor+grouped ;;
        rtt)
            images=$(scale 300 20)
            make_tree rtt "$images" $((200 << 10)) $((8 << 10))
            echo; echo "## rtt: $images images of 200 KiB + 8 KiB, 50 ms round trip"
            compare rtt "$delayed" mirror mirror+warc curl aria2c wget wget+warc ;;
        large)
            size=$(scale $((256 << 20)) $((4 << 20)))
            make_tree large 4 "$size" $((8 << 10))
            echo; echo "## large: 4 files of $((size >> 20)) MiB (and 4 thumbnails), loopback"
            compare large "$direct" mirror mirror+warc curl curl+sync aria2c wget+warc ;;
        dup)
            images=$(scale 1000 40)
            make_tree dup "$images" $((50 << 10)) $((8 << 10)) 30
            echo; echo "## dup: $images images, and 30 % more entries repeating earlier ones (requests must be unique URLs: $(sort -u "$work/www/urls.txt" | wc -l))"
            compare dup "$direct" mirror curl aria2c floor+steps
            unique=$(sort -u "$work/www/urls.txt" | wc -l)
            if [ -s "$work/results-mirror" ]; then
                asked=$(cut -d' ' -f5 "$work/results-mirror" | sort -n | tail -1)
                [ "$asked" -eq "$unique" ] || echo "dup: mirror asked for $asked media files, $unique unique" >> "$work/problems"
            fi ;;
        rerun)
            images=$(scale 10000 200)
            echo; echo "## rerun: an unchanged second run over $images items"
            first_then_rerun rerun "$images" | grep -v '^first run' ;;
        tag100k)
            images=$(scale 100000 400)
            echo; echo "## tag100k: a first run of $images images (1 KiB + 512 B), then an unchanged rerun"
            first_then_rerun tag100k "$images" ;;
        three100k)
            echo; echo "## three100k: three tags in one run, their sources submitting at once (1 KiB + 512 B)"
            three_sources "$(scale 1000 40)"
            three_sources "$(scale 33334 134)" ;;
    esac
done
if [ -s "$work/problems" ]; then
    echo; echo "FAILED:"; cat "$work/problems"
    exit 1
fi
