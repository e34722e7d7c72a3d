#!/usr/bin/env bash
# metrics-scraper.sh: what a hostile scraper of an echo server's metrics endpoint (`--metrics`, LoopSocket's
# LoopMetricsServer) costs the server's data plane: the latency of a `loadtest echo` load with and without
# Benchmarks/metrics-scraper.py flooding the endpoint with pipelined `GET /metrics` on a few connections and
# holding (or trying to hold) many idle ones.
#
#     Benchmarks/metrics-scraper.sh [LOADTEST [ECHO_SERVER]]
#         (defaults: .build/release/loadtest and .build/release/echo-server, built if missing)
#     ROUNDS=5 RATE=20k Benchmarks/metrics-scraper.sh
#
# echo-server runs on core 0 with one loop and `--metrics` (the endpoint on its own loop and thread, on the
# same core); loadtest runs on core 1 with one loop, CONNS connections at RATE round trips a second (open loop,
# latency from the intended send time), a 1 s warm-up and a DURATION window; the scraper, when on, runs on
# core SCRAPER_CPU (1, beside loadtest: a machine with more cores can keep it off both) for the whole run.
# Rounds alternate quiet and hostile runs against one server. Per run it prints the data plane's p50, p99 and
# max, the rate achieved, the server's CPU per round trip (all its threads), the CPU time of the endpoint's own
# thread (`metrics-0`) over the run, and what the scraper got and spent; then the medians over the rounds, the
# ratio of the hostile p99 to the quiet one (the goal: within 10%), and the endpoint's own counters
# (`loop_metrics_server_*`) as the server saw the attack. Passing an older ECHO_SERVER shows what the same
# attack did before the endpoint was bounded.
#
# Environment: ROUNDS (3), DURATION (10), CONNS (50), RATE (10k), FLOOD (8 flooding connections), IDLE (1000
# idle connections), SCRAPER_CPU (1). Loopback only; every process it starts is pinned, bounded by `timeout`,
# and killed by its pid at exit (Benchmarks/bench-lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -le 2 ] || { echo "usage: $0 [LOADTEST [ECHO_SERVER]]" >&2; exit 2; }
# shellcheck source=bench-lib.sh
source Benchmarks/bench-lib.sh
loadtest_and_server echo-server "$@"
ROUNDS=${ROUNDS:-3}; DURATION=${DURATION:-10}; CONNS=${CONNS:-50}; RATE=${RATE:-10k}
FLOOD=${FLOOD:-8}; IDLE=${IDLE:-1000}; SCRAPER_CPU=${SCRAPER_CPU:-1}
TMP=$(mktemp -d /tmp/metrics-scraper.XXXXXX)
BENCH_NAME=metrics-scraper.sh
trap cleanup EXIT

# free_port runs in a subshell: NEXT_PORT moves past the first port here, or both would get the same one.
PORT=$(free_port); NEXT_PORT=$PORT; METRICS_PORT=$(free_port)
launch_server echo-server "$PORT" "$TMP/server.log" "$SERVER" --host 127.0.0.1 --port "$PORT" --loops 1 \
    --metrics "127.0.0.1:$METRICS_PORT"
for _ in $(seq 1 50); do
    ss -Htln "sport = :$METRICS_PORT" | grep -q . && break
    sleep 0.1
done
ss -Htln "sport = :$METRICS_PORT" | grep -q . || { echo "$BENCH_NAME: no metrics endpoint on $METRICS_PORT" >&2; exit 1; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds," \
    "-c $CONNS --rate $RATE -d $DURATION; scraper: $FLOOD flooding, $IDLE idle connections"
# CPU time in ns of the server's thread named $1 (/proc/PID/task/*/comm), 0 if there is none.
thread_ns() {
    local task
    for task in /proc/"$SERVER_PID"/task/*; do
        [ "$(cat "$task/comm" 2>/dev/null)" = "$1" ] && { cut -d' ' -f1 "$task/schedstat"; return; }
    done
    echo 0
}
printf '%-5s %-8s %9s %9s %9s %11s %9s %11s %8s %10s %10s\n' round case p50_us p99_us max_us achieved/s "srv us/rt" \
    "endpoint ms" scraped unanswered "scraper s"
run() {  # round case
    local json="$TMP/$1-$2.json" scraper_pid="" report="$TMP/$1-$2.scraper"
    rm -f "$json" "$report"
    if [ "$2" = hostile ]; then
        timeout $((DURATION + 30)) taskset -c "$SCRAPER_CPU" python3 Benchmarks/metrics-scraper.py --port "$METRICS_PORT" \
            --seconds $((DURATION + 2)) --flood "$FLOOD" --idle "$IDLE" --report "$report" >"$TMP/scraper.log" 2>&1 &
        scraper_pid=$!
        STARTED_PIDS+=("$scraper_pid")
        sleep 0.5  # the scraper's connections are open (or refused) before the warm-up starts
    fi
    local endpoint_before
    endpoint_before=$(thread_ns metrics-0)
    timeout $((DURATION + 60)) taskset -c 1 "$LOADTEST" echo --port "$PORT" -c "$CONNS" --loops 1 -d "$DURATION" \
        --warmup 1 --rate "$RATE" --server-pid "$SERVER_PID" --quiet --json "$json" >"$TMP/client.log" 2>&1 &
    local pid=$!
    STARTED_PIDS+=("$pid")
    # A run with errors still writes its figures.
    wait "$pid" || [ -s "$json" ] || { echo "loadtest failed ($2):" >&2; cat "$TMP/client.log" >&2; exit 1; }
    untrack "$pid"
    local endpoint_ns=$(( $(thread_ns metrics-0) - endpoint_before ))
    if [ -n "$scraper_pid" ]; then
        wait "$scraper_pid" || { echo "scraper failed:" >&2; cat "$TMP/scraper.log" >&2; exit 1; }
        untrack "$scraper_pid"
    fi
    python3 - "$1" "$2" "$json" "$report" "$endpoint_ns" <<'PY'
import json, os, sys
round, case, path, report, endpoint_ns = sys.argv[1:]
r = json.load(open(path))
lat = r["latency_us"]
scraper = dict(kv.split("=") for kv in open(report).read().split()) if os.path.exists(report) else {}
server = r.get("server_us_per_request")
print(f"{round:<5} {case:<8} {lat['p50']:9.1f} {lat['p99']:9.1f} {lat['max']:9.1f} {r['requests_per_second']:11.0f} "
      f"{'-' if server is None else f'{server:.2f}':>9} {int(endpoint_ns) / 1e6:11.1f} {scraper.get('responses', '-'):>8} "
      f"{scraper.get('unanswered', '-'):>10} {scraper.get('cpu_s', '-'):>10}"
      + (f"  errors {r['errors']['total']}" if r["errors"]["total"] else ""))
PY
}
for round in $(seq "$ROUNDS"); do
    run "$round" quiet | tee -a "$TMP/table"
    run "$round" hostile | tee -a "$TMP/table"
done
echo "# medians over $ROUNDS rounds; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$TMP/table" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def median(case, column):
    return statistics.median(float(r[column]) for r in rows if r[1] == case)
print(f"{'case':<8} {'p50_us':>9} {'p99_us':>9} {'max_us':>9}")
for case in ("quiet", "hostile"):
    print(f"{case:<8} {median(case, 2):9.1f} {median(case, 3):9.1f} {median(case, 4):9.1f}")
ratio = median("hostile", 3) / median("quiet", 3)
print(f"p99 hostile / quiet: {ratio:.3f} ({'within' if ratio <= 1.10 else 'over'} the 10% goal)")
PY
echo "# the endpoint's counters at the end"
curl -sS --max-time 5 "http://127.0.0.1:$METRICS_PORT/metrics" | grep '^loop_metrics_server_' || echo "(none: an endpoint without them)"
