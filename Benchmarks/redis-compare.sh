#!/usr/bin/env bash
# `loadtest tcp --reply resp` (one loop) as a Redis client beside redis-benchmark, against the same
# redis-server: PING (inline), SET and GET of DATA bytes (1024), 50 connections, pipeline 1 and 16. The server
# runs pinned to core 0 (`--save '' --appendonly no`), each client pinned to core 1; redis-benchmark and
# loadtest alternate run by run within each round (the machine is shared), ROUNDS rounds (3).
#
#     Benchmarks/redis-compare.sh [SECONDS] [PIPELINES...]     (defaults: 4 s windows; pipelines 1 16)
#     ROUNDS=5 DATA=3 Benchmarks/redis-compare.sh              # redis-benchmark's own default value size
#
# Both clients send the same bytes: redis-benchmark's (`-t ping_inline,set,get -d DATA`: `PING\r\n` inline,
# SET and GET of `key:__rand_int__` as RESP arrays, the value DATA bytes of `x`), given to loadtest with
# `--send`; the key is stored before the first run, so every GET returns DATA bytes. loadtest frames every
# reply (`--reply resp`, an error reply counted) but checks no contents, as redis-benchmark checks none.
#
# Each run's window is measured the same way for both clients, from outside: after a 1.5 s warm-up, over
# SECONDS, the requests the server processed (`total_commands_processed` of `INFO stats`), the client's CPU
# time and the server's (/proc/PID/task/*/schedstat summed over the threads: user and system time, in ns).
# Figures per run: client CPU µs per request, requests/s, server CPU µs per request; then per command and
# pipeline the medians over the rounds and the median of the rounds' loadtest ÷ redis-benchmark ratios,
# recorded as Benchmarks/results/redis-clients.json with BENCH_RECORD=1. Needs redis-server, redis-cli and redis-benchmark (Debian's redis-server and
# redis-tools) and `swift build -c release --product loadtest` (or LOADTEST pointing at a build).
set -euo pipefail
cd "$(dirname "$0")/.."
# The command as recorded: with the settings that change the figures, when they are not the defaults.
COMMAND="$([ -z "${ROUNDS:-}" ] || printf 'ROUNDS=%s ' "$ROUNDS")$([ -z "${DATA:-}" ] || printf 'DATA=%s ' "$DATA")"
COMMAND="${COMMAND}Benchmarks/redis-compare.sh $*"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SECS=${1:-4}; shift || true
PIPELINES=("${@:-1 16}"); PIPELINES=(${PIPELINES[@]})
ROUNDS=${ROUNDS:-3}
DATA=${DATA:-1024}
CONNECTIONS=50
WARMUP=1.5
LOADTEST=${LOADTEST:-.build/release/loadtest}
for tool in redis-server redis-cli redis-benchmark "$LOADTEST"; do
    command -v "$tool" >/dev/null || { echo "redis-compare.sh: $tool not found" >&2; exit 1; }
done
TMP=$(mktemp -d /tmp/redis-compare.XXXXXX)
BENCH_NAME=redis-compare.sh
# shellcheck source=bench-lib.sh
source Benchmarks/bench-lib.sh
trap cleanup EXIT
trap 'echo "redis-compare.sh: interrupted" >&2; exit 130' INT TERM

PORT=$(free_port)
launch_server redis-server "$PORT" "$TMP/redis.log" redis-server --port "$PORT" --bind 127.0.0.1 \
    --save '' --appendonly no --dir "$TMP"
REDIS_VERSION=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
VALUE=$(head -c "$DATA" /dev/zero | tr '\0' x)
redis-cli -p "$PORT" set key:__rand_int__ "$VALUE" >/dev/null

# The requests, as redis-benchmark writes them (redisFormatCommand): loadtest's --send escapes.
declare -A REQUEST=(
    [ping_inline]='PING\r\n'
    [set]="*3\\r\\n\$3\\r\\nSET\\r\\n\$16\\r\\nkey:__rand_int__\\r\\n\$$DATA\\r\\n$VALUE\\r\\n"
    [get]='*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n'
)

# sample CLIENT_PID: the client's and the server's CPU time (ns), then the server's commands and error
# replies so far (one INFO, which is not counted in its own figures).
sample() {
    local client server
    client=$(cpu_ns "$1"); server=$(cpu_ns "$SERVER_PID")
    echo "$client $server $(redis-cli -p "$PORT" info stats | tr -d '\r' \
        | awk -F: '$1 == "total_commands_processed" { n = $2 } $1 == "total_error_replies" { e = $2 } END { print n, e }')"
}

# run_one CLIENT TEST PIPELINE ROUND: one client's run, its window measured from outside; one line to
# stdout and runs.txt.
run_one() {
    local client=$1 test=$2 pipeline=$3 round=$4 pid json="$TMP/loadtest.json" errors=0
    if [ "$client" = redis-benchmark ]; then
        taskset -c 1 redis-benchmark -h 127.0.0.1 -p "$PORT" -c "$CONNECTIONS" -P "$pipeline" -d "$DATA" \
            -t "$test" -n 2000000000 -q >/dev/null 2>&1 &
    else
        rm -f "$json"
        timeout $((SECS + 60)) taskset -c 1 "$LOADTEST" tcp --host 127.0.0.1 --port "$PORT" -c "$CONNECTIONS" \
            --pipeline "$pipeline" --loops 1 --send "${REQUEST[$test]}" --reply resp \
            --warmup 1 --duration $((SECS + 30)) --quiet --json "$json" >/dev/null 2>"$TMP/loadtest.err" &
    fi
    pid=$!
    STARTED_PIDS+=("$pid")
    sleep "$WARMUP"
    # The process measured: loadtest runs under `timeout`, as its child.
    local measured=$pid
    [ "$client" = redis-benchmark ] || measured=$(pgrep -P "$pid" | head -1)
    [ -n "$measured" ] || { echo "redis-compare.sh: $client is not running" >&2; cat "$TMP/loadtest.err" >&2; exit 1; }
    local t0 t1 c0 c1 s0 s1 n0 n1 e0 e1
    t0=$(date +%s%N); read -r c0 s0 n0 e0 < <(sample "$measured")
    sleep "$SECS"
    t1=$(date +%s%N); read -r c1 s1 n1 e1 < <(sample "$measured")
    # Both run until stopped (loadtest then ends its run early and writes its JSON).
    kill -TERM "$measured" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    untrack "$pid"
    if [ "$client" = loadtest ]; then
        errors=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["errors"]["total"])' "$json") \
            || { echo "redis-compare.sh: loadtest wrote no JSON:" >&2; cat "$TMP/loadtest.err" >&2; exit 1; }
    fi
    echo "$client test=$test pipeline=$pipeline round=$round ns=$((t1 - t0)) client_ns=$((c1 - c0))" \
         "server_ns=$((s1 - s0)) requests=$((n1 - n0 - 1)) error_replies=$((e1 - e0)) client_errors=$errors" \
        | tee -a "$TMP/runs.txt"
}

log "redis-server $REDIS_VERSION on 127.0.0.1:$PORT (core 0), clients on core 1; $ROUNDS rounds of ${SECS} s windows"
for round in $(seq "$ROUNDS"); do
    for test in ping_inline set get; do
        for pipeline in "${PIPELINES[@]}"; do
            run_one redis-benchmark "$test" "$pipeline" "$round"
            run_one loadtest "$test" "$pipeline" "$round"
        done
    done
done
# Both clients wrote the one key stored at the start: the same requests.
keys=$(redis-cli -p "$PORT" dbsize)
[ "$keys" = 1 ] || { echo "redis-compare.sh: the server holds $keys keys, not 1: the clients' requests differ" >&2; exit 1; }
stop_server

echo "medians (client and server CPU µs per request, requests/s; load average $(cut -d' ' -f1-3 /proc/loadavg)):"
python3 - "$TMP/runs.txt" "$COMMAND" "$STARTED" "$SECS" "$ROUNDS" "$DATA" "$CONNECTIONS" "$REDIS_VERSION" \
    "${RECORD:-1}" <<'PY'
import importlib.util, re, statistics, sys
runs_file, command, started, secs, rounds, data, connections, version, record = sys.argv[1:]
spec = importlib.util.spec_from_file_location("record_result", "Benchmarks/record-result.py")
recorder = importlib.util.module_from_spec(spec); spec.loader.exec_module(recorder)
CLIENTS = ("redis-benchmark", "loadtest")
runs = {}
for line in open(runs_file):
    m = re.match(r"(\S+) test=(\S+) pipeline=(\d+) round=(\d+) (.*)", line)
    if not m:
        continue
    f = {k: int(v) for k, v in (kv.split("=") for kv in m[5].split())}
    n = max(f["requests"], 1)
    runs.setdefault((m[2], m[3]), {}).setdefault(m[1], {})[int(m[4])] = {
        "client_us": f["client_ns"] / 1e3 / n, "rate": n / (f["ns"] / 1e9), "server_us": f["server_ns"] / 1e3 / n,
        "errors": f["error_replies"] + f["client_errors"]}
figures = {"seconds": float(secs), "rounds": int(rounds), "data_bytes": int(data), "connections": int(connections),
           "redis": version, "tests": {}}
for (test, pipeline), by_client in runs.items():
    entry = {}
    for client in CLIENTS:
        per_round = by_client.get(client, {})
        entry[client] = {key: statistics.median(r[key] for r in per_round.values()) for key in ("client_us", "rate", "server_us")}
        entry[client].update({key + "_rounds": [round(per_round[r][key], 3) for r in sorted(per_round)]
                              for key in ("client_us", "rate", "server_us")})
        entry[client]["errors"] = sum(r["errors"] for r in per_round.values())
    pairs = [(by_client["loadtest"][r], by_client["redis-benchmark"][r]) for r in by_client.get("loadtest", {})
             if r in by_client.get("redis-benchmark", {})]
    for key in ("client_us", "rate", "server_us"):
        entry[key + "_ratio"] = statistics.median(l[key] / b[key] for l, b in pairs if b[key] > 0)
    figures["tests"].setdefault(test, {})[pipeline] = entry
    b, l = entry["redis-benchmark"], entry["loadtest"]
    print(f"  {test:<11} pipeline {pipeline:>2}: client µs/request redis-benchmark {b['client_us']:.2f}  loadtest "
          f"{l['client_us']:.2f}  (÷ {entry['client_us_ratio']:.2f});  requests/s {b['rate']:,.0f} / {l['rate']:,.0f} "
          f"(÷ {entry['rate_ratio']:.2f});  server µs/request {b['server_us']:.2f} / {l['server_us']:.2f};  "
          f"errors {b['errors']} / {l['errors']}")
if record == "1":
    print("recorded", recorder.record("redis-clients", command.strip(), figures, started=started,
                                      driver=f"redis-benchmark and loadtest tcp in turn, against redis-server {version}"))
PY
