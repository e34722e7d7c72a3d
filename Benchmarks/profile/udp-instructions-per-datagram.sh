#!/usr/bin/env bash
# udp-instructions-per-datagram.sh: user-space instructions a UDP echo server spends per echoed datagram.
#
#     Benchmarks/profile/udp-instructions-per-datagram.sh .build-compare/release/udp-echo-server --loops 1 --host 127.0.0.1 --port PORT
#     Benchmarks/profile/udp-instructions-per-datagram.sh Benchmarks/c-reference/udp_echo_server PORT
#
# Runs the server (the argument PORT is replaced by the port) under `valgrind --tool=callgrind` twice, driven
# by the C `udpgen` (FLOWS flows, one 64-byte datagram in flight each) for 2 s and for 5 s, and divides the
# difference in instructions by the difference in datagrams the server says it echoed (both servers print
# "N datagrams echoed" when they stop). Start-up and shutdown cancel out, and the count does not depend on
# the machine's load. Build our server with `-Xcc -gdwarf-4` (valgrind 3.19 cannot read clang's DWARF 5).
# With BENCH_RECORD=1, recorded as Benchmarks/results/instructions-datagram-SERVER-FLOWSflows.json (RESULT_NAME
# overrides it); without it, only printed.
#
# Environment: FLOWS (100), SIZE (64), C_REF_DIR.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 SERVER [arguments with PORT]" >&2; exit 2; }
SERVER="$1"; shift
SERVER_ARGS=("$@")
source "$(dirname "$0")/c-echo-lib.sh"
c_echo_setup udp-ir udpgen

run() {  # seconds -> "instructions echoed"
    local seconds=$1 out="$TMP/callgrind.$1" port=$((20000 + RANDOM % 20000))
    server_command "$port"
    valgrind --tool=callgrind --callgrind-out-file="$out" "${SERVER_COMMAND[@]}" >"$TMP/server.log" 2>&1 &
    local pid=$!
    for _ in $(seq 150); do grep -q "listening\|bound" "$TMP/server.log" && break; sleep 0.2; done
    timeout $((seconds + 30)) "$C_BIN/udpgen" 127.0.0.1 "$port" "${FLOWS:-100}" "${SIZE:-64}" "$seconds" >"$TMP/gen.log" 2>&1 || true
    kill -INT "$pid"; wait "$pid" 2>/dev/null || true
    local echoed; echoed=$(sed -n 's/.*: \([0-9]*\) datagrams echoed.*/\1/p' "$TMP/server.log")
    local total; total=$(python3 "$HERE/callgrind-calls.py" "$out" none | cut -d' ' -f1)
    echo "$total $echoed"
}
a=$(run 2); b=$(run 5)
line=$(per_call datagram "$a" "$b")
echo "$line"
env_args=("FLOWS=${FLOWS:-100}")
[ "${SIZE:-64}" != 64 ] && env_args+=("SIZE=$SIZE")
DRIVER_TEXT="C udpgen" record_instructions "${RESULT_NAME:-instructions-datagram-$(basename "$SERVER")-${FLOWS:-100}flows}" \
    datagram "$line" "$(command_text udp-instructions-per-datagram.sh "${env_args[@]}")"
