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
# Environment: CONNS (10), SIZE (64), SENDFN (send), PORT (19111), C_REF_DIR; MODE=churn counts per
# churned connection instead (instructions-per-connection.sh).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 SERVER [server arguments]" >&2; exit 2; }
SERVER="$1"; shift
source "$(dirname "$0")/c-echo-lib.sh"
PORT="${PORT:-19111}"
c_echo_setup ir-per-rt loadgen

SERVER_ARGS=("$@")
if [ "${MODE:-pingpong}" = churn ]; then  # per connection: see instructions-per-connection.sh
    per_call connection "$(callgrind_calls 2 setsockopt churn 127.0.0.1 "$PORT" 2 16)" \
        "$(callgrind_calls 5 setsockopt churn 127.0.0.1 "$PORT" 5 16)"
    exit
fi
C=${CONNS:-10}; S=${SIZE:-64}; F=${SENDFN:-send}
per_call "round trip" "$(callgrind_calls 2 "$F" pingpong 127.0.0.1 "$PORT" "$C" "$S" 2)" \
    "$(callgrind_calls 5 "$F" pingpong 127.0.0.1 "$PORT" "$C" "$S" 5)"
