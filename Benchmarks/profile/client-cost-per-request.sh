#!/usr/bin/env bash
# client-cost-per-request.sh: what `loadtest` itself spends per request as a client, beside the C generators
# that share no code with it: `loadtest echo` beside `loadgen pingpong` against the C echo_server, and
# `loadtest http` beside `httpgen` against the C http_server (Benchmarks/c-reference). `CASES=ws` counts
# `loadtest ws` against the C ws_echo_server (no C WebSocket generator stands beside it).
#
#     Benchmarks/profile/client-cost-per-request.sh [LOADTEST]      (default .build-compare/release/loadtest)
#     CASES="http" RATE=1000 Benchmarks/profile/client-cost-per-request.sh
#     CASES=ws Benchmarks/profile/client-cost-per-request.sh
#
# For each client it prints two figures that do not depend on the machine's load:
# - user-space instructions per request: the client under `valgrind --tool=callgrind` for SHORT (2) and LONG
#   (5) seconds, the difference in instructions divided by the difference in calls to `send` (libc's, or
#   loadtest's `cepoll_send`; one per request for every client here), so start-up and shutdown cancel out, as instructions-per-roundtrip.sh
#   does for servers;
# - system calls per request: the client alone (no valgrind) for SYSCALL_SECONDS (4), counted by `perf stat`
#   on the syscall tracepoints, divided by its sends. Only the calls a generator chooses are listed; how many
#   events one epoll_wait returns depends on the machine's load, so compare the two clients of one run.
#
# Build loadtest with `-Xcc -gdwarf-4` (valgrind 3.19 reads no DWARF 5):
#     swift build -c release -Xcc -gdwarf-4 --scratch-path .build-compare --product loadtest
#
# Environment: CASES ("echo http"), ECHO_CONNS (100), HTTP_CONNS (50), RATE (0: closed loop; open loop for
# http at RATE requests/s, with loadtest's --pacing-slack and httpgen's SLACK_US both SLACK_US, 50).
# The servers run on core 0 and the clients on core 1, on 127.0.0.1 ports picked free; nothing is recorded.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=../bench-lib.sh
source Benchmarks/bench-lib.sh
LOADTEST=$(realpath "${1:-.build-compare/release/loadtest}")
C=Benchmarks/c-reference
make -s -C "$C" echo_server loadgen http_server httpgen ws_echo_server
SHORT=${SHORT:-2} LONG=${LONG:-5} SYSCALL_SECONDS=${SYSCALL_SECONDS:-4}
ECHO_CONNS=${ECHO_CONNS:-100} HTTP_CONNS=${HTTP_CONNS:-50} RATE=${RATE:-0} SLACK_US=${SLACK_US:-50}
TMP=$(mktemp -d /tmp/client-cost.XXXXXX)
BENCH_NAME=client-cost-per-request.sh
trap cleanup EXIT

# The command line of client $1 for $2 seconds against port $3.
client() {
    local kind=$1 seconds=$2 port=$3 open=()
    case $kind in
        loadgen) echo "$C/loadgen pingpong 127.0.0.1 $port $ECHO_CONNS 64 $seconds" ;;
        loadtest-echo) echo "$LOADTEST echo --host 127.0.0.1 --port $port -c $ECHO_CONNS -s 64 -l 1 -d $seconds" \
            "--warmup 0 -q" ;;
        httpgen) [ "$RATE" = 0 ] || open=("$RATE" "$SLACK_US")
            echo "$C/httpgen 127.0.0.1 $port $HTTP_CONNS $seconds ${open[*]-}" ;;
        loadtest-ws) echo "$LOADTEST ws --url ws://127.0.0.1:$port/ -c $ECHO_CONNS -s 64 -l 1 -d $seconds --warmup 0 -q" ;;
        loadtest-http) [ "$RATE" = 0 ] || open=(--rate "$RATE" --pacing-slack "${SLACK_US}us")
            echo "$LOADTEST http --url http://127.0.0.1:$port/ -c $HTTP_CONNS -l 1 -d $seconds --warmup 0 -q ${open[*]-}" ;;
    esac
}

# Runs client $1 for $2 seconds against a fresh server ($3), wrapped in the command $4...; prints nothing.
run_client() {
    local kind=$1 seconds=$2 server=$3 port
    shift 3
    port=$(free_port)
    taskset -c 0 "$C/$server" "$port" >"$TMP/server.log" 2>&1 &
    local pid=$!
    STARTED_PIDS+=("$pid")
    for _ in $(seq 50); do grep -q listening "$TMP/server.log" 2>/dev/null && break; sleep 0.1; done
    # shellcheck disable=SC2046
    timeout $((seconds + 120)) taskset -c 1 "$@" $(client "$kind" "$seconds" "$port") >"$TMP/client.log" 2>&1 || true
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
    untrack "$pid"
}

instructions() {  # kind server: instructions per send between a SHORT and a LONG run
    local kind=$1 server=$2 s
    for s in "$SHORT" "$LONG"; do
        run_client "$kind" "$s" "$server" valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.$s"
        python3 Benchmarks/profile/callgrind-calls.py "$TMP/cg.$s" send,cepoll_send
    done | paste -sd' ' | awk '{ printf "%.0f instructions per request (%d requests)", ($3 - $1) / ($4 - $2), $4 - $2 }'
}

syscalls() {  # kind server: the chosen system calls per send
    local kind=$1 server=$2 events=raw_syscalls:sys_enter name
    for name in epoll_wait epoll_pwait epoll_ctl sendto recvfrom timerfd_settime read write futex; do
        events+=",syscalls:sys_enter_$name"
    done
    run_client "$kind" "$SYSCALL_SECONDS" "$server" perf stat -x, -o "$TMP/perf" -e "$events" --
    python3 - "$TMP/perf" <<'PY'
import sys
counts = {}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].isdigit():
        counts[f[2].split(":")[-1].replace("sys_enter_", "").replace("sys_enter", "all")] = int(f[0])
sends = counts.get("sendto", 0) or 1
print(", ".join(f"{k} {v / sends:.3f}" for k, v in counts.items() if v), f"system calls per request ({sends} requests)")
PY
}

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $LOADTEST"
for case in ${CASES:-echo http}; do
    case $case in
        echo) pair=(loadtest-echo loadgen); server=echo_server ;;
        ws) pair=(loadtest-ws); server=ws_echo_server ;;
        *) pair=(loadtest-http httpgen); server=http_server ;;
    esac
    for kind in "${pair[@]}"; do
        printf '%-14s %s\n' "$kind" "$(instructions "$kind" "$server")"
        printf '%-14s %s\n' "" "$(syscalls "$kind" "$server")"
    done
done
