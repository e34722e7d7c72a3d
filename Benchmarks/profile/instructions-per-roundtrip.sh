#!/usr/bin/env bash
# instructions-per-roundtrip.sh: user-space instructions a server spends per echo round trip, exactly.
#
#     Benchmarks/profile/instructions-per-roundtrip.sh .build-compare/release/echo-server --loops 1
#     CONNS=50 SIZE=16384 Benchmarks/profile/instructions-per-roundtrip.sh .build-compare/release/echo-server
#
# Runs the server under `valgrind --tool=callgrind` twice, driven by the C reference load generator
# (`../shared/reference/c-echo`, built in a temp dir) for 2 s and for 5 s, and divides the difference in
# instructions by the difference in calls to libc's `send` (one per round trip). Start-up and shutdown
# cancel out, and the count does not depend on the machine's load. For servers that take `--port P` (ours
# and the SwiftNIO peers). valgrind 3.19 crashes in any program that starts Swift's global concurrent
# executor (`async-echo-server` never does: its tasks all run on its loops) and cannot read the SwiftNIO
# peers' debug info.
#
# Build the server with `-Xcc -gdwarf-4` (compare.sh does): valgrind 3.19 cannot read the DWARF 5 that clang
# emits for the C targets (COpenSSL, CEpollShim) and gives up ("Possibly corrupted debuginfo file").
#
# Environment: CONNS (10), SIZE (64), SENDFN (send), PORT (19111), C_REF_DIR.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 SERVER [server arguments]" >&2; exit 2; }
SERVER="$1"; shift
source "$(dirname "$0")/c-echo-lib.sh"
PORT="${PORT:-19111}"
c_echo_setup ir-per-rt loadgen

run() {  # seconds -> "instructions sends"
    local seconds=$1 out="$TMP/callgrind.$1"; shift
    valgrind --tool=callgrind --callgrind-out-file="$out" "$SERVER" --port "$PORT" "$@" >"$TMP/server.log" 2>&1 &
    local pid=$!
    for _ in $(seq 150); do grep -q listening "$TMP/server.log" && break; sleep 0.2; done
    timeout $((seconds + 30)) "$TMP/c-echo/loadgen" pingpong 127.0.0.1 "$PORT" "${CONNS:-10}" "${SIZE:-64}" "$seconds" >/dev/null 2>&1 || true
    kill -INT "$pid"; wait "$pid" 2>/dev/null || true
    python3 "$HERE/callgrind-calls.py" "$out" "${SENDFN:-send}"
}
a=($(run 2 "$@")); b=($(run 5 "$@"))
python3 -c "import sys; a,b=[int(x) for x in sys.argv[1:3]],[int(x) for x in sys.argv[3:5]]; print(f'{(b[0]-a[0])/(b[1]-a[1]):.0f} instructions per round trip ({b[1]-a[1]} round trips)')" "${a[@]}" "${b[@]}"
