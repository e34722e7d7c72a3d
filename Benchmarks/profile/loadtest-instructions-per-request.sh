#!/usr/bin/env bash
# loadtest-instructions-per-request.sh: user-space instructions the load generator itself spends per request,
# exactly (a load generator's own cost must stay out of what it measures).
#
#     swift build -c release -Xcc -gdwarf-4 --scratch-path .build-compare --product loadtest
#     Benchmarks/profile/loadtest-instructions-per-request.sh .build-compare/release/loadtest
#     MODE=ws Benchmarks/profile/loadtest-instructions-per-request.sh .build-compare/release/loadtest
#
# Runs `loadtest echo` (or `ws`: closed loop, CONNS connections of SIZE bytes, pipeline 1, one loop) under
# `valgrind --tool=callgrind` against the C reference echo server (or ws_echo_server), twice: ended by SIGINT
# after 6 s and after 12 s, and divides the difference in instructions by the difference in calls to libc's
# `send` (one per request). Start-up and shutdown cancel out. The whole run is warm-up (`--warmup 60`), so
# every request costs what it costs at any moment of a long run, whatever share of the run valgrind's
# scheduling gives the window. The count does not depend on the machine's load; the request counts do.
#
# Environment: MODE (echo), CONNS (10), SIZE (64), PORT (19131), C_REF_DIR.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 LOADTEST" >&2; exit 2; }
LOADTEST="$1"
MODE="${MODE:-echo}"
source "$(dirname "$0")/c-echo-lib.sh"
PORT="${PORT:-19131}"
case "$MODE" in
    echo) c_echo_setup lt-ir-per-request echo_server; SERVER_BIN=echo_server; TARGET=(echo --port "$PORT") ;;
    ws) c_echo_setup lt-ir-per-request ws_echo_server; SERVER_BIN=ws_echo_server
        TARGET=(ws --url "ws://127.0.0.1:$PORT/") ;;
    *) echo "MODE is echo or ws, not $MODE" >&2; exit 2 ;;
esac
"$C_BIN/$SERVER_BIN" "$PORT" >"$TMP/server.log" 2>&1 &
sleep 0.5

# `loadtest_calls SECONDS` prints the instructions of a loadtest run ended after SECONDS and its calls to send.
loadtest_calls() {
    local out="$TMP/callgrind.$1"
    timeout -s INT "$1" valgrind --tool=callgrind --callgrind-out-file="$out" "$LOADTEST" "${TARGET[@]}" \
        -c "${CONNS:-10}" --size "${SIZE:-64}" --loops 1 --warmup 60 -d 1 -q >/dev/null 2>&1 || true
    python3 "$HERE/callgrind-calls.py" "$out" send
}
per_call request "$(loadtest_calls 6)" "$(loadtest_calls 12)"
