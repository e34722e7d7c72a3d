#!/usr/bin/env bash
# open-loop-cost.sh: what an open-loop load (`--rate`) costs the client per request, beside closed loop, for
# two loadtest builds run alternately against one http-hello.
#
#     Benchmarks/open-loop-cost.sh BASE_LOADTEST NEW_LOADTEST HTTP_HELLO
#
# http-hello runs on core 0 with one loop; each client runs on core 1 with one loop, 50 connections, a 1 s
# warm-up and a 10 s window. A round runs, for BASE then NEW: closed loop, then `--rate` 10k, 50k and 90k.
# Per run it prints the client's CPU per request (loadtest's own figure: the CPU time of its loop thread over
# the window, divided by the requests), the rate achieved against the target, and latency p50/p90/p99 from
# the intended send time (closed loop: from the send); then, per build, the medians over the rounds and the
# ratio of each rate's CPU per request to closed loop's.
#
# Environment: ROUNDS (3), DURATION (10), CONNS (50), RATES ("10k 50k 90k"), KEEP (a directory that keeps
# every run's --json). Loopback only; every process it starts is pinned, bounded by `timeout`, and killed by
# its pid at exit.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 BASE_LOADTEST NEW_LOADTEST HTTP_HELLO" >&2; exit 2; }
BASE=$(realpath "$1"); NEW=$(realpath "$2"); SERVER=$(realpath "$3")
ROUNDS=${ROUNDS:-3}; DURATION=${DURATION:-10}; CONNS=${CONNS:-50}; RATES=(${RATES:-10k 50k 90k})
TMP=$(mktemp -d /tmp/open-loop-cost.XXXXXX)
SERVER_PID=""
CLIENT_PID=""
cleanup() {
    [ -z "$CLIENT_PID" ] || kill -KILL "$CLIENT_PID" 2>/dev/null || true
    [ -z "$SERVER_PID" ] || kill -TERM "$SERVER_PID" 2>/dev/null || true
    [ -z "$SERVER_PID" ] || wait "$SERVER_PID" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

PORT=$((21000 + RANDOM % 8000))
timeout $((ROUNDS * 8 * (DURATION + 15) + 60)) taskset -c 0 "$SERVER" --host 127.0.0.1 --port "$PORT" --loops 1 \
    >"$TMP/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do grep -q listening "$TMP/server.log" && break; sleep 0.1; done
grep -q listening "$TMP/server.log" || { echo "http-hello did not start:" >&2; cat "$TMP/server.log" >&2; exit 1; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds, -c $CONNS -d $DURATION"
printf '%-5s %-6s %-7s %9s %11s %9s %9s %9s %9s\n' round build load "cpu us/r" "achieved/s" "of target" p50_us \
    p90_us p99_us
run() {  # round build binary load
    local round=$1 build=$2 binary=$3 load=$4 json="$TMP/$1-$2-$4.json" rate=()
    rm -f "$json"
    [ "$load" = closed ] || rate=(--rate "$load")
    timeout $((DURATION + 60)) taskset -c 1 "$binary" http --url "http://127.0.0.1:$PORT/" -c "$CONNS" --loops 1 \
        -d "$DURATION" --warmup 1 ${rate[@]+"${rate[@]}"} --quiet --json "$json" >"$TMP/client.log" 2>&1 &
    CLIENT_PID=$!
    # A run with errors (a rate the server cannot take) exits non-zero but still writes its figures.
    wait "$CLIENT_PID" || [ -s "$json" ] || { echo "loadtest failed ($build $load):" >&2; cat "$TMP/client.log" >&2
        exit 1; }
    CLIENT_PID=""
    python3 - "$json" "$round" "$build" "$load" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
target = r.get("target_rate")
share = f"{r['requests_per_second'] / target * 100:.2f}%" if target else "-"
lat = r["latency_us"]
cpu = r.get("client_us_per_request")  # absent when no CPU reading covered the window
print(f"{sys.argv[2]:<5} {sys.argv[3]:<6} {sys.argv[4]:<7} {'-' if cpu is None else f'{cpu:.2f}':>9} "
      f"{r['requests_per_second']:11.0f} {share:>9} {lat['p50']:9.1f} {lat['p90']:9.1f} {lat['p99']:9.1f}"
      + (f"  errors {r['errors']['total']}" if r["errors"]["total"] else ""))
PY
}
for round in $(seq "$ROUNDS"); do
    for build in base new; do
        binary=$BASE; [ "$build" = base ] || binary=$NEW
        for load in closed "${RATES[@]}"; do run "$round" "$build" "$binary" "$load" | tee -a "$TMP/table"; done
    done
done
[ -z "${KEEP:-}" ] || { mkdir -p "$KEEP"; cp "$TMP"/*.json "$KEEP"/; }
echo "# medians over $ROUNDS rounds; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$TMP/table" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def median(build, load, column):
    values = [float(r[column].rstrip("%")) for r in rows if r[1] == build and r[2] == load and r[column] != "-"]
    return statistics.median(values) if values else float("nan")
loads = list(dict.fromkeys(r[2] for r in rows))
print(f"{'build':<6} {'load':<7} {'cpu us/r':>9} {'x closed':>9} {'achieved/s':>11} {'of target':>9} "
      f"{'p50_us':>9} {'p90_us':>9} {'p99_us':>9}")
for build in ("base", "new"):
    closed = median(build, "closed", 3)
    for load in loads:
        cpu = median(build, load, 3)
        share = median(build, load, 5)
        share_text = "-" if share != share else f"{share:.2f}%"
        print(f"{build:<6} {load:<7} {cpu:9.2f} {cpu / closed:9.2f} {median(build, load, 4):11.0f} {share_text:>9} "
              f"{median(build, load, 6):9.1f} {median(build, load, 7):9.1f} {median(build, load, 8):9.1f}")
PY
