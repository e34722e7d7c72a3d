#!/usr/bin/env bash
# loadtest ws's client CPU per echoed message beside loadtest echo's, at the same message size, connections and
# pipeline, each against its C yardstick on the same loop (Benchmarks/c-reference: ws_echo_server and
# echo_server, on 127.0.0.1 ports PORT+1 and PORT), the servers pinned to core 1 and the client (one loop) to
# core 0, the two clients alternating for ROUNDS rounds. Prints each run's messages/s and client µs per
# message (loadtest's own CPU over the window), then the medians and their ratio.
#
# COUNT=instructions counts the clients' user-space instructions per message instead (valgrind's callgrind;
# the difference of a SHORT and a LONG run, so start-up cancels): the same on a busy machine as on a quiet
# one, where wall-clock CPU time is not. One round; the kernel's share, the same for both, is not in it. With
# BENCH_RECORD=1 the counts are recorded as Benchmarks/results/instructions-message-ws-vs-echo-SIZE.json.
#
#     Benchmarks/ws-vs-echo.sh                         # 64 B, 100 connections, pipeline 1, 3 rounds of 5 s
#     SIZE=1024 CONNECTIONS=10 PIPELINE=4 Benchmarks/ws-vs-echo.sh
#     COUNT=instructions SIZE=1024 Benchmarks/ws-vs-echo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench-lib.sh
source Benchmarks/bench-lib.sh  # for BENCH_LOADAVG_START, the load before the run adds its own
SIZE=${SIZE:-64} CONNECTIONS=${CONNECTIONS:-100} PIPELINE=${PIPELINE:-1} DURATION=${DURATION:-5} ROUNDS=${ROUNDS:-3}
PORT=${PORT:-19500} COUNT=${COUNT:-time} SHORT=${SHORT:-2} LONG=${LONG:-5}
C=Benchmarks/c-reference
make -s -C "$C" echo_server ws_echo_server
if [ "$COUNT" = instructions ]; then
    # valgrind 3.19 cannot read DWARF 5.
    swift build -c release --product loadtest -Xcc -gdwarf-4 >/dev/null
else
    swift build -c release --product loadtest >/dev/null
fi
taskset -c 1 "$C/echo_server" "$PORT" >/dev/null &
echo_pid=$!
taskset -c 1 "$C/ws_echo_server" "$((PORT + 1))" >/dev/null &
ws_pid=$!
scratch=$(mktemp -d)
trap 'kill $echo_pid $ws_pid 2>/dev/null || true; rm -rf "$scratch"' EXIT
target() {
    if [ "$1" = echo ]; then echo "echo --port $PORT"; else echo "ws --url ws://127.0.0.1:$((PORT + 1))/"; fi
}

if [ "$COUNT" = instructions ]; then
    # Instructions and messages of one run of $2 seconds of mode $1, under callgrind.
    counted() {
        # shellcheck disable=SC2046
        taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$scratch/cg.out" .build/release/loadtest \
            $(target "$1") -c "$CONNECTIONS" -s "$SIZE" --pipeline "$PIPELINE" -l 1 -d "$2" --warmup 0 -q \
            --json "$scratch/run.json" >/dev/null 2>&1
        python3 - "$scratch" <<'PY'
import json, sys
d = sys.argv[1]
ir = next(int(l.split()[1]) for l in open(f"{d}/cg.out") if l.startswith(("summary:", "totals:")))
r = json.load(open(f"{d}/run.json"))
assert r["errors"]["total"] == 0, r["errors"]
print(ir, r["requests"])
PY
    }
    for mode in echo ws; do
        read -r i1 n1 < <(counted "$mode" "$SHORT")
        read -r i2 n2 < <(counted "$mode" "$LONG")
        echo "$mode $(( (i2 - i1) / (n2 - n1) ))"
    done | tee /dev/stderr | python3 -c '
import importlib.util, sys
by = dict((f[0], int(f[1])) for f in (line.split() for line in sys.stdin))
e, w = by["echo"], by["ws"]
print(f"instructions per message: echo {e:,}, ws {w:,}: ws/echo {w / e:.2f}x")
# Recorded (with BENCH_RECORD=1) as Benchmarks/results/instructions-message-ws-vs-echo-SIZE.json.
spec = importlib.util.spec_from_file_location("record_result", "Benchmarks/record-result.py")
recorder = importlib.util.module_from_spec(spec); spec.loader.exec_module(recorder)
size, connections, pipeline, command = sys.argv[1:]
print("recorded", recorder.record(f"instructions-message-ws-vs-echo-{size}", command, {
    "echo": e, "ws": w, "size": int(size), "connections": int(connections), "pipeline": int(pipeline)},
    driver="loadtest echo and loadtest ws (one loop) under callgrind, against the C echo_server and ws_echo_server",
    load_independent=True))
' "$SIZE" "$CONNECTIONS" "$PIPELINE" "COUNT=instructions$([ "$SIZE" = 64 ] || echo " SIZE=$SIZE") Benchmarks/ws-vs-echo.sh"
    exit 0
fi

common=(-c "$CONNECTIONS" -s "$SIZE" --pipeline "$PIPELINE" -l 1 -d "$DURATION" --warmup 1 -q --json -)
for round in $(seq "$ROUNDS"); do
    for mode in echo ws; do
        # shellcheck disable=SC2046
        taskset -c 0 .build/release/loadtest $(target "$mode") "${common[@]}" | python3 -c '
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
