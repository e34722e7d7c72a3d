#!/usr/bin/env bash
# compare.sh: our servers beside SwiftNIO, the C reference and nginx, measured with loadtest or the C loadgen.
#
# Builds (release) echo-server, async-echo-server, http-hello and loadtest (root package), nio-echo-server,
# nio-async-echo-server and nio-http-server (this package, unless --no-nio), and the C reference servers
# (Benchmarks/c-reference, built with make). Then, round after round, runs every server of every scenario in turn, the server
# pinned to core 0 and loadtest (one loop) pinned to core 1, and prints one table of server CPU µs per
# operation (utime+stime of the server over the measured window / operations: the primary figure) and
# operations per second, plus an SVG chart. With --driver loadgen the load comes from the independent C
# load generator (Benchmarks/c-reference/loadgen, built with the C servers) instead of loadtest, measured
# the same way (server on core 0, loadgen on core 1). The machine is noisy: servers alternate within each
# round and the table shows the median over rounds; compare ratios. With loadgen, the servers of a ping-pong or
# churn scenario alternate within the round too: all run at once, one loadgen loads each in turn for --slice
# seconds, and a server's CPU is read at both ends of each of its slices (loadgen.c, measure_rotation below). The medians (and every round's figure) are recorded, with BENCH_RECORD=1, as Benchmarks/results/NAME.json
# (servers-loadtest or servers-loadgen unless --record NAME), which docs/benchmarks.md is rendered from.
#
#     Benchmarks/compare.sh                 # full run: 10 s windows, 3 rounds (about 20 minutes)
#     Benchmarks/compare.sh --quick         # 3 s windows, 1 round, to iterate
#     Benchmarks/compare.sh --only e64_100,http --rounds 5 --svg docs/benchmarks-servers.svg
#     Benchmarks/compare.sh --driver loadgen --only e64_100,e64_1000,e64_5000,connect,idle
#
# Options:
#   --quick            3 s windows, 1 s warm-up, 1 round
#   --duration S       measured window per run (default 10)
#   --warmup S         load before the window (default 1; 2 for 5,000 connections)
#   --rounds N         rounds (default 3)
#   --only LIST        scenarios, comma-separated (default all):
#                      e64_1 e64_100 e64_1000 e64_5000 e16k stream connect idle http
#   --out DIR          where raw results go (default /tmp/compare-YYYYmmdd-HHMMSS)
#   --svg FILE         chart (default OUT/servers.svg)
#   --no-build         use the binaries already built
#   --build-only       build everything, measure nothing
#   --no-nginx         leave nginx out even if installed
#   --no-nio           leave the SwiftNIO peers out (and do not build the Benchmarks package)
#   --record NAME      with BENCH_RECORD=1, record the medians as Benchmarks/results/NAME.json (default servers-DRIVER)
#   --no-record        record nothing (a trial run)
#   --driver D         loadtest (default) or loadgen (the C load generator; it speaks no HTTP, so the http
#                      scenario is left out; its pingpong/stream/churn/idle modes drive the other scenarios)
#   --report DIR       only print the table and chart of an earlier run's DIR
#   --slice S          with loadgen: each server's turn in a round's rotation (default 0.5; see below)
#   --one-at-a-time    with loadgen: one window per server instead of the rotation
#
# Everything listens on 127.0.0.1 only. Every process the script starts is killed when it exits, and every
# run is bounded by `timeout`. Raw per-run JSON (loadtest --json, idle memory samples) stays in OUT.
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT_DIR="$(cd "$BENCH_DIR/.." && pwd)"
C_REF_DIR="${C_REF_DIR:-$BENCH_DIR/c-reference}"
ROOT_BUILD="${ROOT_BUILD:-$ROOT_DIR/.build-compare}"
BENCH_BUILD="${BENCH_BUILD:-$BENCH_DIR/.build-peers}"

DURATION=10
WARMUP=1
ROUNDS=3
ONLY=""
OUT=""
SVG=""
BUILD=1
USE_NGINX=1
USE_NIO=1
RECORD=""
NO_RECORD=0
REPORT_ONLY=""
BUILD_ONLY=0
IDLE_CONNECTIONS=10000
ALL_SCENARIOS="e64_1 e64_100 e64_1000 e64_5000 e16k stream connect idle http"
DRIVER=loadtest
ROTATE=1
SLICE=0.5
ARGS_TEXT="$*"

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) DURATION=3; WARMUP=1; ROUNDS=1 ;;
        --duration) DURATION="$2"; shift ;;
        --warmup) WARMUP="$2"; shift ;;
        --rounds) ROUNDS="$2"; shift ;;
        --only) ONLY="${2//,/ }"; shift ;;
        --out) OUT="$2"; shift ;;
        --svg) SVG="$2"; shift ;;
        --no-build) BUILD=0 ;;
        --build-only) BUILD_ONLY=1 ;;
        --no-nginx) USE_NGINX=0 ;;
        --no-nio) USE_NIO=0 ;;
        --record) RECORD="$2"; shift ;;
        --no-record) NO_RECORD=1 ;;
        --driver) DRIVER="$2"; shift ;;
        --report) REPORT_ONLY="$2"; shift ;;
        --slice) SLICE="$2"; shift ;;
        --one-at-a-time) ROTATE=0 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

case "$DRIVER" in
    loadtest|loadgen) ;;
    *) echo "compare.sh: --driver is loadtest or loadgen, not $DRIVER" >&2; exit 2 ;;
esac

if [ -n "$REPORT_ONLY" ]; then
    exec python3 "$BENCH_DIR/compare-report.py" "$REPORT_ONLY" --svg "${SVG:-$REPORT_ONLY/servers.svg}"
fi

SCENARIOS="${ONLY:-$ALL_SCENARIOS}"
if [ "$DRIVER" = loadgen ]; then
    case " $SCENARIOS " in
        *" http "*) echo "compare.sh: loadgen speaks no HTTP; the http scenario is left out" >&2 ;;
    esac
    SCENARIOS="$(echo " $SCENARIOS " | sed 's/ http / /; s/^ *//; s/ *$//')"
fi
OUT="${OUT:-/tmp/compare-$(date -u +%Y%m%d-%H%M%S)}"
SVG="${SVG:-$OUT/servers.svg}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
TMP="$(mktemp -d /tmp/compare-work.XXXXXX)"

# ---------------------------------------------------------------------------------------------------------
# Cleanup: every process started here is recorded and killed by its pid at exit.

BENCH_NAME=compare.sh
# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"
trap cleanup EXIT
trap 'echo "compare.sh: interrupted" >&2; exit 130' INT TERM

# ---------------------------------------------------------------------------------------------------------
# Build

ROOT_BIN="$ROOT_BUILD/release"
BENCH_BIN="$BENCH_BUILD/release"
C_BIN="$C_REF_DIR"

if [ "$BUILD" = 1 ]; then
    for product in echo-server async-echo-server http-hello loadtest; do
        log "building $product (root package, release)"
        (cd "$ROOT_DIR" && swift build -c release -Xcc -gdwarf-4 --scratch-path "$ROOT_BUILD" --product "$product" >"$OUT/build-$product.log" 2>&1) \
            || { tail -30 "$OUT/build-$product.log" >&2; exit 1; }
    done
    for product in $( [ "$USE_NIO" = 1 ] && echo nio-echo-server nio-async-echo-server nio-http-server); do
        log "building $product (Benchmarks package, release)"
        (cd "$BENCH_DIR" && swift build -c release --scratch-path "$BENCH_BUILD" --product "$product" >"$OUT/build-$product.log" 2>&1) \
            || { tail -30 "$OUT/build-$product.log" >&2; exit 1; }
    done
fi
log "building the C reference in $C_BIN"
make -s -C "$C_BIN" echo_server http_server loadgen >"$OUT/build-c.log" 2>&1 || { cat "$OUT/build-c.log" >&2; exit 1; }

NIO_BINS=()
[ "$USE_NIO" = 1 ] && NIO_BINS=("$BENCH_BIN/nio-echo-server" "$BENCH_BIN/nio-async-echo-server" "$BENCH_BIN/nio-http-server")
# loadgen needs no loadtest.
DRIVER_BIN="$ROOT_BIN/loadtest"
[ "$DRIVER" = loadgen ] && DRIVER_BIN="$ROOT_BIN/echo-server"
for bin in "$ROOT_BIN/echo-server" "$ROOT_BIN/async-echo-server" "$ROOT_BIN/http-hello" "$DRIVER_BIN" \
           ${NIO_BINS[@]+"${NIO_BINS[@]}"}; do
    [ -x "$bin" ] || { echo "compare.sh: missing $bin (run without --no-build)" >&2; exit 1; }
done
LOADTEST="$ROOT_BIN/loadtest"
LOADGEN="$C_BIN/loadgen"
if [ "$BUILD_ONLY" = 1 ]; then
    log "built; binaries in $ROOT_BIN, $BENCH_BIN and $C_BIN"
    exit 0
fi

NGINX=""
if [ "$USE_NGINX" = 1 ] && command -v nginx >/dev/null 2>&1; then
    NGINX="$(command -v nginx)"
fi

# Raise the descriptor limit for 5,000 and 10,000 connections (children inherit it).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((IDLE_CONNECTIONS + 100)) ]; then
    echo "compare.sh: the descriptor limit $(ulimit -n) is too low for $IDLE_CONNECTIONS connections" >&2
    exit 1
fi

# ---------------------------------------------------------------------------------------------------------
# Servers

# Scenario -> servers measured in it (in the order they alternate). The async server is measured beside the
# delegate one wherever a connection's cost differs between them: many connections, churn, idle memory.
servers_of() {
    local servers
    case "$1" in
        e64_100|e64_1000|idle) servers="c ours ours-async nio nio-async" ;;
        e64_5000|connect) servers="c ours ours-async nio" ;;
        e64_1|e16k|stream) servers="c ours nio" ;;
        http) servers="c-http ours-http nio-http${NGINX:+ nginx}" ;;
        *) echo "compare.sh: unknown scenario $1" >&2; exit 2 ;;
    esac
    [ "$USE_NIO" = 1 ] || servers="$(echo " $servers " | sed 's/ nio[a-z-]*//g; s/^ *//; s/ *$//')"
    echo "$servers"
}

# start_server NAME PORT LOG: starts it pinned to core 0, waits until it listens.
start_server() {
    local name="$1" port="$2" logfile="$3"
    local -a cmd
    case "$name" in
        c) cmd=("$C_BIN/echo_server" "$port") ;;
        c-http) cmd=("$C_BIN/http_server" "$port") ;;
        ours) cmd=("$ROOT_BIN/echo-server" --port "$port" --host 127.0.0.1 --loops 1) ;;
        ours-async) cmd=("$ROOT_BIN/async-echo-server" --port "$port" --host 127.0.0.1 --loops 1) ;;
        ours-http) cmd=("$ROOT_BIN/http-hello" --port "$port" --host 127.0.0.1 --loops 1) ;;
        nio) cmd=("$BENCH_BIN/nio-echo-server" --port "$port" --host 127.0.0.1 --loops 1) ;;
        nio-async) cmd=("$BENCH_BIN/nio-async-echo-server" --port "$port" --host 127.0.0.1 --loops 1) ;;
        nio-http) cmd=("$BENCH_BIN/nio-http-server" --port "$port" --host 127.0.0.1 --loops 1) ;;
        nginx)
            write_nginx_conf "$TMP/nginx-$port" "$port"
            cmd=("$NGINX" -e "$TMP/nginx-$port/logs/error.log" -p "$TMP/nginx-$port" -c "$TMP/nginx-$port/nginx.conf") ;;
        *) echo "compare.sh: unknown server $name" >&2; exit 2 ;;
    esac
    launch_server "$name" "$port" "$logfile" "${cmd[@]}"
}

# ---------------------------------------------------------------------------------------------------------
# One measurement

# loadtest arguments of a scenario (without port, duration and output).
loadtest_args() {
    local scenario="$1" port="$2"
    case "$scenario" in
        e64_1) echo "echo --size 64 --connections 1" ;;
        e64_100) echo "echo --size 64 --connections 100" ;;
        e64_1000) echo "echo --size 64 --connections 1000" ;;
        e64_5000) echo "echo --size 64 --connections 5000 --max-connecting 128" ;;
        e16k) echo "echo --size 16k --connections 100" ;;
        stream) echo "stream --connections 10" ;;
        connect) echo "connect --connections 16" ;;
        http) echo "http --url http://127.0.0.1:$port/ --connections 100" ;;
    esac
}

measure() { # scenario server round
    local scenario="$1" server="$2" round="$3"
    local port tag result warmup
    port="$(free_port)"
    tag="$scenario.$server.r$round"
    result="$OUT/$tag.json"
    start_server "$server" "$port" "$OUT/$tag.server.log" || return 0
    if [ "$scenario" = idle ]; then
        measure_idle "$server" "$port" "$result" "$tag"
    else
        warmup="$WARMUP"
        [ "$scenario" = e64_5000 ] && warmup=$((WARMUP > 2 ? WARMUP : 2))
        if [ "$DRIVER" = loadgen ]; then
            measure_loadgen "$scenario" "$server" "$round" "$port" "$warmup" "$result" "$tag"
            stop_server
            return 0
        fi
        # shellcheck disable=SC2046
        taskset -c 1 timeout --kill-after=5 $((DURATION + warmup + 90)) \
            "$LOADTEST" $(loadtest_args "$scenario" "$port") --port "$port" --loops 1 \
            --duration "$DURATION" --warmup "$warmup" --server-pid "$SERVER_PID" \
            --json "$result" --quiet >"$OUT/$tag.loadtest.log" 2>&1 &
        local lt=$!
        STARTED_PIDS+=("$lt")
        wait "$lt" || log "  $tag: loadtest exited with $? (see $OUT/$tag.loadtest.log)"
        untrack "$lt"
        python3 - "$result" "$scenario" "$server" "$round" "$(cat /proc/loadavg)" <<'EOF' || true
import json, sys
path, scenario, server, round_, loadavg = sys.argv[1:6]
try:
    d = json.load(open(path))
except Exception:
    sys.exit(0)
d["compare"] = {"scenario": scenario, "server": server, "round": int(round_), "loadavg": loadavg}
json.dump(d, open(path, "w"))
EOF
        if [ -f "$result" ]; then
            log "  $tag: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["mode"]=="stream"; print("%.0f %s, server %.2f %s, errors %d" % (d["mib_per_second"] if s else d["requests_per_second"], "MiB/s" if s else "/s", (d.get("server_cpu_s") or 0)*1e6/max(d["bytes"]/1048576,1e-9) if s else (d.get("server_us_per_request") or 0), "µs/MiB" if s else "µs/op", d["errors"]["total"]))' "$result")"
        fi
    fi
    stop_server
}

# loadgen's command line of a scenario.
loadgen_args() { # scenario port seconds
    local scenario="$1" port="$2" secs="$3"
    case "$scenario" in
        e64_1) echo "pingpong 127.0.0.1 $port 1 64 $secs" ;;
        e64_100) echo "pingpong 127.0.0.1 $port 100 64 $secs" ;;
        e64_1000) echo "pingpong 127.0.0.1 $port 1000 64 $secs" ;;
        e64_5000) echo "pingpong 127.0.0.1 $port 5000 64 $secs" ;;
        e16k) echo "pingpong 127.0.0.1 $port 100 16384 $secs" ;;
        stream) echo "stream 127.0.0.1 $port 10 $secs" ;;
        connect) echo "churn 127.0.0.1 $port $secs 16" ;;
    esac
}

# One window driven by loadgen; its RESULT line becomes the fields the report reads from loadtest's JSON
# (requests, requests_per_second, server_cpu_s, server_us_per_request, bytes, mib_per_second, errors).
measure_loadgen() { # scenario server round port warmup result tag
    local scenario="$1" server="$2" round="$3" port="$4" warmup="$5" result="$6" tag="$7" lg
    # shellcheck disable=SC2046
    LOADGEN_SERVER_PID="$SERVER_PID" LOADGEN_WARMUP="$warmup" LOADGEN_MAX_PENDING="$(loadgen_pending "$scenario")" \
        taskset -c 1 timeout --kill-after=5 $((DURATION + warmup + 90)) \
        "$LOADGEN" $(loadgen_args "$scenario" "$port" "$DURATION") >"$OUT/$tag.loadgen.log" 2>&1 &
    lg=$!
    STARTED_PIDS+=("$lg")
    wait "$lg" || log "  $tag: loadgen exited with $? (see $OUT/$tag.loadgen.log)"
    untrack "$lg"
    loadgen_result "$OUT/$tag.loadgen.log" "$result" "$scenario" "$server" "$round" -
}

# Connections loadgen keeps unconfirmed at once while it ramps up.
loadgen_pending() { if [ "$1" = e64_5000 ]; then echo 128; else echo 64; fi; }

# loadgen_result LOG RESULT SCENARIO SERVER ROUND TARGET: loadgen's RESULT line (that of server TARGET when
# several took turns, or `-`) as the JSON the report reads.
loadgen_result() {
    python3 - "$@" "$(cat /proc/loadavg)" <<'EOF' || true
import json, sys
log, path, scenario, server, round_, target, loadavg = sys.argv[1:8]
def fields(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
lines = [fields(l) for l in open(log) if l.startswith("RESULT ")]
f = next((f for f in lines if target == "-" or f.get("target") == target), None)
if f is None:
    sys.exit(0)
secs = float(f["secs"])
srv_cpu_s = float(f["srv_cpu"]) / 100 * secs if "srv_cpu" in f else None
d = {"driver": "loadgen", "mode": f["mode"], "duration_s": secs, "loadgen": f,
     "errors": {"total": int(f.get("errors", 0))}, "server_cpu_s": srv_cpu_s}
if f["mode"] == "stream":
    d["mib_per_second"] = float(f["mib_s"])
    d["bytes"] = float(f["mib_s"]) * secs * 1048576
else:
    rate = float(f["rps"] if "rps" in f else f["cps"])
    d["requests_per_second"] = rate
    d["requests"] = round(rate * secs)
    d["server_us_per_request"] = float(f["srv_us_per_op"]) if "srv_us_per_op" in f else None
if f.get("slice_us"):
    d["slice_us"] = [float(x) for x in f["slice_us"].split(",")]
d["compare"] = {"scenario": scenario, "server": server, "round": int(round_), "loadavg": loadavg}
json.dump(d, open(path, "w"))
cost = d.get("server_us_per_request")
if f["mode"] == "stream" and srv_cpu_s is not None and d["bytes"] > 0:
    cost_text = "%.2f µs/MiB" % (srv_cpu_s * 1e6 / (d["bytes"] / 1048576))
else:
    cost_text = "%.2f µs/op" % cost if cost is not None else "?"
print("  %s: %.0f %s, server %s, errors %d (loadgen)" % (
    path.rsplit("/", 1)[-1][:-5], d.get("mib_per_second") or d.get("requests_per_second") or 0,
    "MiB/s" if f["mode"] == "stream" else "/s", cost_text, d["errors"]["total"]), file=sys.stderr)
EOF
}

# Connections (churn: parallel slots) per server that loadgen holds in a scenario it rotates, read off
# loadgen_args; empty for the scenarios it does not rotate (stream, idle).
loadgen_connections() {
    local -a args
    read -ra args <<<"$(loadgen_args "$1" 0 1)"
    case "${args[0]:-}" in
        pingpong) echo "${args[3]}" ;;
        churn) echo "${args[4]}" ;;
    esac
}

# With --driver loadgen, the servers of a ping-pong or churn scenario take turns under one loadgen, in slices
# of --slice seconds (loadgen.c says how): they run side by side on core 0, each on its own port, and only
# one is loaded at a time. A drift in the machine's speed then falls on all of them within the round, where
# one window per server puts it on whichever ran at the time. The servers are split into rotations of as
# many as loadgen's descriptor limit holds, each led by the C reference (5,000 connections: C, echo-server
# and async-echo-server, then C and SwiftNIO; the second C figure is only logged).
measure_rotation() { # scenario round
    local scenario="$1" round="$2" per limit room server first=1
    local -a group=()
    per="$(loadgen_connections "$scenario")"
    limit="$(ulimit -n)"
    [ "$limit" = unlimited ] && limit=1000000
    room=$(( (limit - 64) / per ))
    [ "$room" -gt 8 ] && room=8
    for server in $(servers_of "$scenario"); do
        if [ "${#group[@]}" -ge "$room" ]; then
            rotate_group "$scenario" "$round" "$first" "${group[@]}"
            group=(c)
            first=2
        fi
        group+=("$server")
    done
    rotate_group "$scenario" "$round" "$first" "${group[@]}"
}

# rotate_group SCENARIO ROUND FIRST SERVER...: one loadgen over the servers in turn; records the JSON of each
# from the FIRST-th on (1-based: a later rotation's lead C server is logged only).
rotate_group() {
    local scenario="$1" round="$2" first="$3"
    shift 3
    local -a names=("$@") ports=() pids=() mains=()
    local i port warmup tag lg ok=1
    for i in "${!names[@]}"; do
        port="$(free_port)"
        start_server "${names[$i]}" "$port" "$OUT/$scenario.${names[$i]}.r$round.server.log" || { ok=0; break; }
        ports+=("$port"); pids+=("$SERVER_PID"); mains+=("$SERVER_MAIN_PID")
    done
    if [ "$ok" = 1 ]; then
        warmup="$WARMUP"
        [ "$scenario" = e64_5000 ] && warmup=$((WARMUP > 2 ? WARMUP : 2))
        tag="$scenario.rotation-$(IFS=-; echo "${names[*]}").r$round"
        # shellcheck disable=SC2046
        LOADGEN_SERVER_PID="$(IFS=,; echo "${pids[*]}")" LOADGEN_SLICE="$SLICE" LOADGEN_WARMUP="$warmup" \
            LOADGEN_MAX_PENDING="$(loadgen_pending "$scenario")" \
            taskset -c 1 timeout --kill-after=5 $(( (DURATION + warmup) * ${#names[@]} + 120 )) \
            "$LOADGEN" $(loadgen_args "$scenario" "$(IFS=,; echo "${ports[*]}")" "$DURATION") \
            >"$OUT/$tag.loadgen.log" 2>&1 &
        lg=$!
        STARTED_PIDS+=("$lg")
        wait "$lg" || log "  $tag: loadgen exited with $? (see $OUT/$tag.loadgen.log)"
        untrack "$lg"
        for i in "${!names[@]}"; do
            if [ "$i" -ge $((first - 1)) ]; then
                loadgen_result "$OUT/$tag.loadgen.log" "$OUT/$scenario.${names[$i]}.r$round.json" "$scenario" \
                    "${names[$i]}" "$round" "$i"
            else
                log "  $scenario.${names[$i]}.r$round, lead of a later rotation (not recorded):" \
                    "$(grep "^RESULT .*target=$i " "$OUT/$tag.loadgen.log" | grep -o 'srv_us_per_op=[0-9.]*' || echo '?')"
            fi
        done
    fi
    for i in "${!mains[@]}"; do
        SERVER_MAIN_PID="${mains[$i]}" SERVER_PID="${pids[$i]}"
        stop_server
    done
}

# Idle memory: server VmRSS before and after IDLE_CONNECTIONS idle connections.
measure_idle() { # server port result tag
    local server="$1" port="$2" result="$3" tag="$4"
    local rss0 fd0 rss1 fd1 i lt established
    rss0="$(rss_kib "$SERVER_PID")"
    fd0="$(fd_count "$SERVER_PID")"
    if [ "$DRIVER" = loadgen ]; then
        taskset -c 1 timeout --kill-after=5 120 "$LOADGEN" idle 127.0.0.1 "$port" "$IDLE_CONNECTIONS" 100 \
            >"$OUT/$tag.loadgen.log" 2>&1 &
    else
        taskset -c 1 timeout --kill-after=5 120 "$LOADTEST" idle --port "$port" --connections "$IDLE_CONNECTIONS" \
            --loops 1 --duration 100 --warmup 0 --json "$OUT/$tag.loadtest.json" --quiet >"$OUT/$tag.loadtest.log" 2>&1 &
    fi
    lt=$!
    STARTED_PIDS+=("$lt")
    established=0
    for i in $(seq 1 600); do
        fd1="$(fd_count "$SERVER_PID")"
        if [ "$fd1" -ge $((fd0 + IDLE_CONNECTIONS)) ]; then established=1; break; fi
        kill -0 "$lt" 2>/dev/null || break
        sleep 0.1
    done
    sleep 1
    rss1="$(rss_kib "$SERVER_PID")"
    fd1="$(fd_count "$SERVER_PID")"
    kill -TERM "$lt" 2>/dev/null || true
    wait "$lt" 2>/dev/null || true
    untrack "$lt"
    python3 - "$result" "$server" "$rss0" "$rss1" "$fd0" "$fd1" "$IDLE_CONNECTIONS" "$established" "$tag" "$(cat /proc/loadavg)" <<'EOF'
import json, sys
path, server, rss0, rss1, fd0, fd1, n, ok, tag, loadavg = sys.argv[1:11]
rss0, rss1, fd0, fd1, n = int(rss0), int(rss1), int(fd0), int(fd1), int(n)
conns = fd1 - fd0
d = {"mode": "idle", "compare": {"scenario": "idle", "server": server, "round": int(tag.rsplit(".r", 1)[1]), "loadavg": loadavg},
     "rss_before_kib": rss0, "rss_after_kib": rss1, "fds_before": fd0, "fds_after": fd1,
     "connections": conns, "target_connections": n, "all_established": ok == "1",
     "bytes_per_connection": (rss1 - rss0) * 1024 / conns if conns > 0 else None}
json.dump(d, open(path, "w"))
EOF
    log "  $tag: RSS $rss0 KiB -> $rss1 KiB with $((fd1 - fd0)) connections: $(( (rss1 - rss0) * 1024 / (fd1 - fd0 > 0 ? fd1 - fd0 : 1) )) B/connection"
}

# ---------------------------------------------------------------------------------------------------------
# Run

{
    echo "{"
    echo "  \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
    echo "  \"command\": \"Benchmarks/compare.sh${ARGS_TEXT:+ $ARGS_TEXT}\","
    echo "  \"commit\": \"$(git -C "$ROOT_DIR" rev-parse HEAD 2>/dev/null || echo unknown)\","
    echo "  \"dirty\": $( [ -n "$(git -C "$ROOT_DIR" status --porcelain -- Sources 2>/dev/null)" ] && echo true || echo false),"
    echo "  \"nproc\": $(nproc),"
    echo "  \"cpu\": \"$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)\","
    echo "  \"kernel\": \"$(uname -sr)\","
    echo "  \"swift\": \"$(swift --version 2>/dev/null | head -1 | sed 's/"/\\"/g')\","
    echo "  \"nginx\": \"$( [ -n "$NGINX" ] && "$NGINX" -v 2>&1 | sed 's/.*: //' || echo none)\","
    echo "  \"driver\": \"$DRIVER\","
    echo "  \"duration_s\": $DURATION, \"warmup_s\": $WARMUP, \"rounds\": $ROUNDS,"
    [ "$DRIVER" = loadgen ] && [ "$ROTATE" = 1 ] && echo "  \"slice_s\": $SLICE,"
    echo "  \"scenarios\": \"$SCENARIOS\","
    echo "  \"loadavg_start\": \"$(cat /proc/loadavg)\""
    echo "}"
} >"$OUT/meta.json"

log "results in $OUT; scenarios: $SCENARIOS; $ROUNDS round(s) of ${DURATION} s windows"
for round in $(seq 1 "$ROUNDS"); do
    log "round $round of $ROUNDS"
    for scenario in $SCENARIOS; do
        if [ "$DRIVER" = loadgen ] && [ "$ROTATE" = 1 ] && [ -n "$(loadgen_connections "$scenario")" ]; then
            measure_rotation "$scenario" "$round"
            continue
        fi
        for server in $(servers_of "$scenario"); do
            measure "$scenario" "$server" "$round"
        done
    done
done
echo "$(cat /proc/loadavg)" >"$OUT/loadavg-end.txt"

RECORD_ARGS=()
[ "$NO_RECORD" = 1 ] || RECORD_ARGS=(--record "${RECORD:-servers-$DRIVER}")
python3 "$BENCH_DIR/compare-report.py" "$OUT" --svg "$SVG" ${RECORD_ARGS[@]+"${RECORD_ARGS[@]}"}
