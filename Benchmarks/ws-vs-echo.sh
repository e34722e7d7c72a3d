#!/usr/bin/env bash
# loadtest ws's client CPU per echoed message beside loadtest echo's, at the same message size, connections and
# pipeline, each against its C yardstick on the same loop (Benchmarks/c-reference: ws_echo_server and
# echo_server, on 127.0.0.1 ports 19501 and 19500), the servers pinned to core 1 and the client (one loop) to
# core 0, the two clients alternating for ROUNDS rounds. Prints each run's messages/s and client µs per
# message (loadtest's own CPU over the window), then the medians and their ratio.
#
#     Benchmarks/ws-vs-echo.sh                         # 64 B, 100 connections, pipeline 1, 3 rounds of 5 s
#     SIZE=1024 CONNECTIONS=10 PIPELINE=4 Benchmarks/ws-vs-echo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${SIZE:-64} CONNECTIONS=${CONNECTIONS:-100} PIPELINE=${PIPELINE:-1} DURATION=${DURATION:-5} ROUNDS=${ROUNDS:-3}
C=Benchmarks/c-reference
make -s -C "$C" echo_server ws_echo_server
swift build -c release --product loadtest >/dev/null
taskset -c 1 "$C/echo_server" 19500 >/dev/null &
echo_pid=$!
taskset -c 1 "$C/ws_echo_server" 19501 >/dev/null &
ws_pid=$!
trap 'kill $echo_pid $ws_pid 2>/dev/null || true' EXIT
common=(-c "$CONNECTIONS" -s "$SIZE" --pipeline "$PIPELINE" -l 1 -d "$DURATION" --warmup 1 -q --json -)
for round in $(seq "$ROUNDS"); do
    for mode in echo ws; do
        if [ "$mode" = echo ]; then target=(echo --port 19500); else target=(ws --url ws://127.0.0.1:19501/); fi
        taskset -c 0 .build/release/loadtest "${target[@]}" "${common[@]}" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["errors"]["total"] == 0, r["errors"]
rate, cost = r["requests_per_second"], r["client_us_per_request"]
print(f"{sys.argv[1]} {sys.argv[2]:4} {rate:10.0f} msg/s {cost:7.2f} µs/msg")
' "$round" "$mode"
    done
done | tee /dev/stderr | python3 -c '
import statistics, sys
by = {}
for line in sys.stdin:
    f = line.split()
    by.setdefault(f[1], []).append(float(f[4]))
e, w = statistics.median(by["echo"]), statistics.median(by["ws"])
print(f"median client µs per message: echo {e:.2f}, ws {w:.2f}: ws/echo {w / e:.2f}x")
'
