#!/usr/bin/env bash
# counts-per-roundtrip.sh: system calls, mallocs and Swift concurrency enqueues/switches per echo round trip.
#
#     Benchmarks/profile/counts-per-roundtrip.sh .build-compare/release/async-echo-server
#
# Starts the server on core 0 (one loop), drives it with `loadtest echo` (100 connections, 64 B) on core 1,
# and counts for 2 s with `perf stat`: uprobes on libc's `malloc` and on the concurrency runtime's
# `swift_task_enqueue` and `swift_task_switch`, and the tracepoints of `sendto`, `recvfrom`, `epoll_wait`,
# `epoll_pwait` (our loops wait with it) and `epoll_ctl`. Divides each by the `sendto` count. Needs root (perf probes); removes its probes at exit.
#
# Environment: LOADTEST (.build-compare/release/loadtest), CONNS (100), SIZE (64), PORT (19222).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 SERVER" >&2; exit 2; }
SERVER="$(realpath "$1")"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LOADTEST="${LOADTEST:-$ROOT/.build-compare/release/loadtest}"
PORT="${PORT:-19222}"
LIBC="$(ldd "$SERVER" | awk '/libc.so.6/ {print $3}')"
CONCURRENCY="$(ldd "$SERVER" | awk '/libswift_Concurrency.so/ {print $3}')"
OUT="$(mktemp /tmp/counts.XXXXXX)"
perf probe -q -d 'probe_*:*' 2>/dev/null || true
trap 'kill $(jobs -p) 2>/dev/null || true; perf probe -q -d "probe_*:*" 2>/dev/null || true; rm -f "$OUT"' EXIT
perf probe -q -x "$LIBC" -a malloc
perf probe -q -x "$CONCURRENCY" -a swift_task_enqueue
perf probe -q -x "$CONCURRENCY" -a swift_task_switch
taskset -c 0 "$SERVER" --port "$PORT" --loops 1 >/dev/null 2>&1 &
pid=$!
sleep 1
timeout 30 taskset -c 1 "$LOADTEST" echo --host 127.0.0.1 --port "$PORT" --connections "${CONNS:-100}" \
    --size "${SIZE:-64}" --loops 1 --duration 5 --quiet >/dev/null 2>&1 &
sleep 2
perf stat -x, -e 'probe_*:*' -e syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom \
    -e syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_epoll_ctl -p "$pid" -o "$OUT" -- sleep 2
python3 - "$OUT" <<'PY'
import sys
counts = {}
for line in open(sys.argv[1]):
    fields = line.strip().split(",")
    if len(fields) > 2 and fields[0].isdigit():
        counts[fields[2].split(":")[-1]] = int(fields[0])
sends = counts.get("sys_enter_sendto") or 1
for name, value in counts.items():
    print(f"{name:24s} {value / sends:8.2f} per round trip")
PY
