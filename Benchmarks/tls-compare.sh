#!/usr/bin/env bash
# tls-compare.sh: our HTTPS server (http-hello --tls-cert/--tls-key) beside nginx and swift-nio-ssl
# (nio-https-server), driven by wrk, loadtest, openssl s_time and a Python asyncio+ssl client.
#
# Generates a throw-away ECDSA P-256 certificate and key in a temp dir (removed at exit), builds http-hello and
# loadtest (root package, release) and nio-https-server (this package, release), then, round after round, runs every
# server of every case in turn, the server pinned to core 0 and the client to core 1, and prints one
# Markdown table per case: the median over rounds of server CPU µs per operation (utime+stime from
# /proc/PID/stat before and after the measured window, divided by the operations the client completed: the
# primary figure), operations per second, and the ratio to nginx. The machine is noisy: compare ratios.
# With BENCH_RECORD=1 the medians and every round are recorded as Benchmarks/results/tls-servers.json (record-result.py; --record
# NAME for another name), which docs/benchmarks.md's TLS tables are rendered from (render-docs.py).
#
#   keepalive  HTTPS "hello", keep-alive, wrk -t1 -c100: server CPU µs per request, requests/s
#   close      wrk -t1 -c16 -H 'Connection: close': one connection per request. wrk keeps its SSL object
#              across reconnects, so these are resumed TLS 1.3 handshakes (PSK + ECDHE, no certificate
#              signature), whenever the server issues session tickets: server CPU µs per connection
#   resume     loadtest http -c 16 --tls-resume -H 'Connection: close' (one loop): the client asks for
#              resumption, so every connection after the first is a resumed handshake and one request:
#              server CPU µs per connection (loadtest --server-pid, over its window)
#   full       16 × `openssl s_time -new -www /` (HTTP/1.0, the server closes): a full handshake, one
#              request: server CPU µs per connection
#   idle       heap per idle TLS connection after its handshake: tls-idle-client.py opens N connections,
#              VmRSS (and glibc malloc in-use bytes, read with gdb) before and after, divided by N
#   idlereq    the same after one keep-alive request on each connection (tls-idle-client.py --request): an
#              idle keep-alive connection, which may hold buffers a fresh one does not
#   plain      plaintext http-hello and nginx, keep-alive, wrk -t1 -c100, for reference
#   idleplain  the idle case over plain TCP (ours and nginx), the part of the idle figure that is not TLS
#
#     Benchmarks/tls-compare.sh                       # 10 s windows, 2 rounds (about 8 minutes)
#     Benchmarks/tls-compare.sh --quick               # 3 s windows, 1 round
#     Benchmarks/tls-compare.sh --only keepalive,full --rounds 3
#
# Options:
#   --quick            3 s windows, 1 round
#   --duration S       measured window per run (default 10)
#   --rounds N         rounds (default 2)
#   --only LIST        cases, comma-separated (default all): keepalive close resume full idle idlereq plain
#                      idleplain
#   --servers LIST     only these servers, comma-separated (ours nginx nio ours-plain nginx-plain); without
#                      nio, nio-https-server is neither built nor needed
#   --idle N           connections in the idle case (default 2000)
#   --out DIR          where raw results go (default /tmp/tls-compare-YYYYmmdd-HHMMSS)
#   --no-build         use the binaries already built
#   --report DIR       only print the tables of an earlier run's DIR
#   --record NAME      with BENCH_RECORD=1, record the run as Benchmarks/results/NAME.json (default tls-servers)
#   --no-record        record nothing (a trial run)
#
# Needs nginx, wrk, openssl, gdb (malloc figures; skipped without it) and python3. Everything listens on
# 127.0.0.1 only; every process the script starts is killed when it exits; every run is bounded by timeout.
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT_DIR="$(cd "$BENCH_DIR/.." && pwd)"
ROOT_BUILD="${ROOT_BUILD:-$ROOT_DIR/.build-compare}"
BENCH_BUILD="${BENCH_BUILD:-$BENCH_DIR/.build-peers}"

DURATION=10
WARMUP=1
ROUNDS=2
ONLY=""
SERVERS=""
OUT=""
BUILD=1
REPORT_ONLY=""
IDLE_CONNECTIONS=2000
ALL_CASES="keepalive close resume full idle idlereq plain idleplain"
RECORD=tls-servers
ARGS_TEXT="$*"

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) DURATION=3; ROUNDS=1 ;;
        --duration) DURATION="$2"; shift ;;
        --rounds) ROUNDS="$2"; shift ;;
        --only) ONLY="${2//,/ }"; shift ;;
        --servers) SERVERS=" ${2//,/ } "; shift ;;
        --idle) IDLE_CONNECTIONS="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        --no-build) BUILD=0 ;;
        --report) REPORT_ONLY="$2"; shift ;;
        --record) RECORD="$2"; shift ;;
        --no-record) RECORD="" ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "tls-compare.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ -n "$REPORT_ONLY" ]; then
    exec python3 "$BENCH_DIR/tls-compare-report.py" "$REPORT_ONLY"
fi

for tool in nginx wrk openssl python3 taskset ss; do
    command -v "$tool" >/dev/null 2>&1 || { echo "tls-compare.sh: needs $tool (apt-get install nginx wrk openssl)" >&2; exit 1; }
done
NGINX="$(command -v nginx)"

CASES="${ONLY:-$ALL_CASES}"
OUT="${OUT:-/tmp/tls-compare-$(date -u +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
TMP="$(mktemp -d /tmp/tls-compare-work.XXXXXX)"

BENCH_NAME=tls-compare.sh
# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"
trap cleanup EXIT
trap 'echo "tls-compare.sh: interrupted" >&2; exit 130' INT TERM

# ---------------------------------------------------------------------------------------------------------
# Build and certificate

wanted() { [ -z "$SERVERS" ] || [[ "$SERVERS" == *" $1 "* ]]; }
needs_loadtest() { [[ " $CASES " == *" resume "* ]]; }  # only the resume case drives with loadtest

ROOT_BIN="$ROOT_BUILD/release"
BENCH_BIN="$BENCH_BUILD/release"
if [ "$BUILD" = 1 ]; then
    for product in http-hello $(needs_loadtest && echo loadtest); do
        log "building $product (root package, release)"
        (cd "$ROOT_DIR" && swift build -c release -Xcc -gdwarf-4 --scratch-path "$ROOT_BUILD" --product "$product" \
            >"$OUT/build-$product.log" 2>&1) || { tail -30 "$OUT/build-$product.log" >&2; exit 1; }
    done
    if wanted nio; then
        log "building nio-https-server (Benchmarks package, release)"
        (cd "$BENCH_DIR" && swift build -c release --scratch-path "$BENCH_BUILD" --product nio-https-server >"$OUT/build-nio-https-server.log" 2>&1) \
            || { tail -30 "$OUT/build-nio-https-server.log" >&2; exit 1; }
    fi
fi
for bin in "$ROOT_BIN/http-hello" $(needs_loadtest && echo "$ROOT_BIN/loadtest") $(wanted nio && echo "$BENCH_BIN/nio-https-server"); do
    [ -x "$bin" ] || { echo "tls-compare.sh: missing $bin (run without --no-build)" >&2; exit 1; }
done

CERT="$TMP/cert.pem"
KEY="$TMP/key.pem"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$KEY" -out "$CERT" >"$OUT/openssl-req.log" 2>&1 \
    || { cat "$OUT/openssl-req.log" >&2; exit 1; }

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((IDLE_CONNECTIONS + 100)) ]; then
    echo "tls-compare.sh: the descriptor limit $(ulimit -n) is too low for $IDLE_CONNECTIONS connections" >&2
    exit 1
fi
CLK_TCK="$(getconf CLK_TCK)"

# ---------------------------------------------------------------------------------------------------------
# Servers

servers_of() {
    local all name
    case "$1" in
        keepalive|close|resume|full|idle|idlereq) all="ours nginx nio" ;;
        plain|idleplain) all="ours-plain nginx-plain" ;;
        *) echo "tls-compare.sh: unknown case $1" >&2; exit 2 ;;
    esac
    for name in $all; do wanted "$name" && echo -n "$name "; done
    echo
}

start_server() { # name port log
    local name="$1" port="$2" logfile="$3" dir
    local -a cmd
    case "$name" in
        ours) cmd=("$ROOT_BIN/http-hello" --port "$port" --host 127.0.0.1 --loops 1 --tls-cert "$CERT" --tls-key "$KEY") ;;
        ours-plain) cmd=("$ROOT_BIN/http-hello" --port "$port" --host 127.0.0.1 --loops 1) ;;
        nio) cmd=("$BENCH_BIN/nio-https-server" --port "$port" --host 127.0.0.1 --loops 1 --cert "$CERT" --key "$KEY") ;;
        nginx|nginx-plain)
            dir="$TMP/nginx-$port"
            if [ "$name" = nginx ]; then write_nginx_conf "$dir" "$port" "$CERT" "$KEY"; else write_nginx_conf "$dir" "$port"; fi
            cmd=("$NGINX" -e "$dir/logs/error.log" -p "$dir" -c "$dir/nginx.conf") ;;
        *) echo "tls-compare.sh: unknown server $name" >&2; exit 2 ;;
    esac
    launch_server "$name" "$port" "$logfile" "${cmd[@]}"
}

url_of() { # server port
    case "$1" in
        *-plain) echo "http://127.0.0.1:$2/" ;;
        *) echo "https://127.0.0.1:$2/" ;;
    esac
}

# glibc malloc's bytes in use (arenas less their free chunks, plus mmapped chunks) of a running process,
# read by calling malloc_info() in it with gdb; empty without gdb or when it fails.
malloc_in_use() { # pid
    local pid="$1" xml="$TMP/malloc-$1-$RANDOM.xml"
    command -v gdb >/dev/null 2>&1 || return 0
    timeout 60 gdb -p "$pid" -batch -nx -ex "set \$f = (void *) fopen(\"$xml\", \"w\")" \
        -ex 'call (int) malloc_info(0, $f)' -ex 'call (int) fclose($f)' >/dev/null 2>&1 || true
    [ -s "$xml" ] || return 0
    python3 - "$xml" <<'PY' || true
import re, sys
text = open(sys.argv[1]).read()
tail = text[text.rindex("</heap>") :]  # the totals over all arenas follow the last heap
get = lambda kind, attr: int(re.search(r'<(?:total|system) type="%s"[^>]*%s="(\d+)"' % (kind, attr), tail).group(1))
print(get("current", "size") - get("fast", "size") - get("rest", "size") + get("mmap", "size"))
PY
}

# ---------------------------------------------------------------------------------------------------------
# One measurement

record() { # json fields as key=value (numbers) or key:=string
    python3 - "$OUT/results.jsonl" "$@" <<'PY'
import json, sys
d = {}
for a in sys.argv[2:]:
    if ":=" in a:
        k, v = a.split(":=", 1); d[k] = v
    else:
        k, v = a.split("=", 1)
        try:
            d[k] = float(v) if v not in ("", "None") else None
        except ValueError:
            d[k] = v
open(sys.argv[1], "a").write(json.dumps(d) + "\n")
PY
}

# wrk for DURATION seconds after WARMUP seconds of the same load: server CPU µs per request.
measure_wrk() { # case server round port tag
    local case_="$1" server="$2" round="$3" port="$4" tag="$5" url t0 t1 requests rps errors
    local -a extra=(-c 100)
    [ "$case_" = close ] && extra=(-c 16 -H 'Connection: close')
    url="$(url_of "$server" "$port")"
    taskset -c 1 timeout --kill-after=5 $((WARMUP + 30)) wrk -t1 "${extra[@]}" -d "${WARMUP}s" "$url" >"$OUT/$tag.warmup.log" 2>&1 || true
    t0="$(cpu_ticks "$SERVER_PID")"
    taskset -c 1 timeout --kill-after=5 $((DURATION + 60)) wrk -t1 "${extra[@]}" -d "${DURATION}s" "$url" >"$OUT/$tag.wrk.log" 2>&1 &
    local w=$!
    STARTED_PIDS+=("$w")
    wait "$w" || log "  $tag: wrk exited with $? (see $OUT/$tag.wrk.log)"
    untrack "$w"
    t1="$(cpu_ticks "$SERVER_PID")"
    requests="$(awk '/requests in/ { print $1 }' "$OUT/$tag.wrk.log")"
    rps="$(awk '/^Requests\/sec:/ { print $2 }' "$OUT/$tag.wrk.log")"
    errors="$(awk '/Socket errors:/ { gsub(",", ""); n += $4 + $6 + $8 + $10 } /Non-2xx/ { n += $NF } END { print n + 0 }' "$OUT/$tag.wrk.log")"
    report_run "$case_" "$server" "$round" "$t0" "$t1" "${requests:-0}" "${rps:-0}" "${errors:-0}"
}

# 16 openssl s_time clients, each a full handshake and one HTTP/1.0 request per connection.
measure_full() { # case server round port tag
    local case_="$1" server="$2" round="$3" port="$4" tag="$5" t0 t1 i conns errors
    local -a pids=()
    t0="$(cpu_ticks "$SERVER_PID")"
    for i in $(seq 1 16); do
        taskset -c 1 timeout --kill-after=5 $((DURATION + 30)) openssl s_time -connect "127.0.0.1:$port" -new -www / \
            -time "$DURATION" >"$OUT/$tag.s_time.$i.log" 2>&1 &
        pids+=($!)
        STARTED_PIDS+=($!)
    done
    for i in "${pids[@]}"; do
        wait "$i" || true
        untrack "$i"
    done
    t1="$(cpu_ticks "$SERVER_PID")"
    conns="$(cat "$OUT/$tag".s_time.*.log | awk '/connections in .* real seconds/ { n += $1 } END { print n + 0 }')"
    errors="$(cat "$OUT/$tag".s_time.*.log | grep -ci error || true)"
    report_run "$case_" "$server" "$round" "$t0" "$t1" "$conns" "$(awk -v n="$conns" -v d="$DURATION" 'BEGIN { printf "%.1f", n / d }')" "$errors"
}

report_run() { # case server round ticks0 ticks1 operations per_second errors
    local us
    us="$(python3 -c 'import sys; t0,t1,n,hz=map(float,sys.argv[1:5]); print("%.2f" % ((t1-t0)/hz*1e6/n) if n > 0 else "")' "$4" "$5" "$6" "$CLK_TCK")"
    record case:="$1" server:="$2" round="$3" cpu_s="$(awk -v a="$4" -v b="$5" -v hz="$CLK_TCK" 'BEGIN { printf "%.3f", (b - a) / hz }')" operations="$6" \
        per_second="$7" errors="$8" us_per_op="$us" loadavg:="$(cat /proc/loadavg)"
    log "  $1.$2.r$3: $6 operations, $7/s, server ${us:-?} µs/op, errors $8"
}

# Heap per idle TLS connection: VmRSS and malloc in use before and after IDLE_CONNECTIONS handshakes.
measure_idle() { # case server round port tag
    local case_="$1" server="$2" round="$3" port="$4" tag="$5" rss0 rss1 heap0 heap1 fd0 fd1 c ready="" i
    local -a plain=()
    [ "$case_" = idleplain ] && plain=(--plain)
    [ "$case_" = idlereq ] && plain=(--request)
    # One connection first, so that what every server sets up on its first connection is not counted.
    timeout 10 taskset -c 1 python3 "$BENCH_DIR/tls-idle-client.py" --port "$port" --connections 1 --hold 0.1 "${plain[@]}" \
        </dev/null >/dev/null 2>&1 || true
    sleep 0.5
    rss0="$(rss_kib "$SERVER_PID")"; fd0="$(fd_count "$SERVER_PID")"; heap0="$(malloc_in_use "$SERVER_PID")"
    mkfifo "$TMP/idle-hold.$tag"
    taskset -c 1 timeout --kill-after=5 300 python3 "$BENCH_DIR/tls-idle-client.py" --port "$port" \
        --connections "$IDLE_CONNECTIONS" --hold 240 "${plain[@]}" <"$TMP/idle-hold.$tag" >"$OUT/$tag.client.log" 2>&1 &
    c=$!
    STARTED_PIDS+=("$c")
    exec 9>"$TMP/idle-hold.$tag"   # the client holds its connections until this closes
    for i in $(seq 1 1200); do
        ready="$(grep -m1 '^ready' "$OUT/$tag.client.log" || true)"
        [ -n "$ready" ] && break
        kill -0 "$c" 2>/dev/null || break
        sleep 0.1
    done
    sleep 1
    rss1="$(rss_kib "$SERVER_PID")"; fd1="$(fd_count "$SERVER_PID")"; heap1="$(malloc_in_use "$SERVER_PID")"
    exec 9>&-
    wait "$c" 2>/dev/null || true
    untrack "$c"
    c="$(echo "$ready" | awk '{ print $2 + 0 }')"
    record case:="$case_" server:="$server" round="$round" connections="$c" client:="$ready" rss_before_kib="$rss0" \
        rss_after_kib="$rss1" fds_before="$fd0" fds_after="$fd1" heap_before="${heap0:-}" heap_after="${heap1:-}" \
        rss_bytes_per_conn="$( [ "${c:-0}" -gt 0 ] && echo $(( (rss1 - rss0) * 1024 / c )) )" \
        heap_bytes_per_conn="$( [ "${c:-0}" -gt 0 ] && [ -n "$heap0" ] && [ -n "$heap1" ] && echo $(( (heap1 - heap0) / c )) )" \
        loadavg:="$(cat /proc/loadavg)"
    log "  $tag: ${ready:-no ready line}; RSS $rss0 -> $rss1 KiB, fds $fd0 -> $fd1, malloc in use ${heap0:-?} -> ${heap1:-?}"
}

# loadtest http with session resumption, one request per connection: its server CPU over its window.
measure_resume() { # case server round port tag
    local case_="$1" server="$2" round="$3" port="$4" tag="$5" figures
    taskset -c 1 timeout --kill-after=5 $((WARMUP + DURATION + 60)) "$ROOT_BIN/loadtest" http \
        --url "$(url_of "$server" "$port")" --insecure --tls-resume -H 'Connection: close' -c 16 --loops 1 \
        --warmup "${WARMUP}s" --duration "${DURATION}s" --server-pid "$SERVER_PID" --json "$OUT/$tag.json" --quiet \
        >"$OUT/$tag.loadtest.log" 2>&1 || log "  $tag: loadtest exited with $? (see $OUT/$tag.loadtest.log)"
    figures="$(python3 - "$OUT/$tag.json" <<'PY' || true
import json, sys
run = json.load(open(sys.argv[1]))
print(run.get("server_cpu_s") or 0, run.get("requests") or 0, round(run.get("requests_per_second") or 0, 1),
      (run.get("errors") or {}).get("total", 0), run.get("server_us_per_request") or "")
PY
)"
    read -r cpu requests rps errors us <<<"${figures:-0 0 0 0}"
    record case:="$case_" server:="$server" round="$round" cpu_s="$cpu" operations="$requests" per_second="$rps" \
        errors="$errors" us_per_op="${us:-}" loadavg:="$(cat /proc/loadavg)"
    log "  $case_.$server.r$round: $requests connections, $rps/s, server ${us:-?} µs/connection, errors $errors"
}

measure() { # case server round
    local case_="$1" server="$2" round="$3" port tag
    port="$(free_port)"
    tag="$case_.$server.r$round"
    start_server "$server" "$port" "$OUT/$tag.server.log" || return 0
    case "$case_" in
        keepalive|close|plain) measure_wrk "$case_" "$server" "$round" "$port" "$tag" ;;
        full) measure_full "$case_" "$server" "$round" "$port" "$tag" ;;
        resume) measure_resume "$case_" "$server" "$round" "$port" "$tag" ;;
        idle|idlereq|idleplain) measure_idle "$case_" "$server" "$round" "$port" "$tag" ;;
    esac
    kill -0 "$SERVER_PID" 2>/dev/null || log "  $tag: the server died (see $OUT/$tag.server.log)"
    stop_server
}

# ---------------------------------------------------------------------------------------------------------
# Run

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "swift: $(swift --version 2>/dev/null | grep -o 'Swift version [^ ]* ([^)]*)' | head -1)"
    echo "command: Benchmarks/tls-compare.sh${ARGS_TEXT:+ $ARGS_TEXT}"
    echo "commit: $(git -C "$ROOT_DIR" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "cpu: $(nproc) x $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "kernel: $(uname -sr)"
    echo "nginx: $("$NGINX" -V 2>&1 | grep -E 'version|OpenSSL' | tr '\n' ' ')"
    echo "wrk: $(wrk -v 2>&1 | head -1)"
    echo "openssl: $(openssl version)"
    echo "windows: ${DURATION} s after ${WARMUP} s warm-up, $ROUNDS round(s), idle $IDLE_CONNECTIONS connections"
    echo "duration_s: $DURATION"
    echo "warmup_s: $WARMUP"
    echo "rounds: $ROUNDS"
    echo "idle_connections: $IDLE_CONNECTIONS"
    echo "loadavg at start: $(cat /proc/loadavg)"
} >"$OUT/meta.txt"
: >"$OUT/results.jsonl"

log "results in $OUT; cases: $CASES; $ROUNDS round(s) of ${DURATION} s windows"
for round in $(seq 1 "$ROUNDS"); do
    log "round $round of $ROUNDS"
    for case_ in $CASES; do
        for server in $(servers_of "$case_"); do
            measure "$case_" "$server" "$round"
        done
    done
done
echo "loadavg at end: $(cat /proc/loadavg)" >>"$OUT/meta.txt"

python3 "$BENCH_DIR/tls-compare-report.py" "$OUT" ${RECORD:+--record "$RECORD"}
