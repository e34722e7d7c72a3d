#!/usr/bin/env bash
# instructions-per-roundtrip.sh: user-space instructions a server spends per echo round trip, exactly.
#
#     Benchmarks/profile/instructions-per-roundtrip.sh .build-compare/release/echo-server --loops 1
#     Benchmarks/profile/instructions-per-roundtrip.sh Benchmarks/c-reference/echo_server PORT
#     CONNS=50 SIZE=16384 Benchmarks/profile/instructions-per-roundtrip.sh .build-compare/release/echo-server
#
# Runs the server under `valgrind --tool=callgrind` twice, driven by the C reference load generator
# (Benchmarks/c-reference/loadgen, built with make) for 2 s and for 5 s, and divides the difference in
# instructions by the difference in calls to `send` (libc's, or the shim's `cepoll_send`; one per round
# trip). Start-up and shutdown cancel out, and the count does not depend on the machine's load. The server
# gets `--port P` (ours and the SwiftNIO peers) unless an argument is the word PORT, which becomes the port
# (the C servers). valgrind 3.19 crashes in any program that starts Swift's global concurrent executor
# (`async-echo-server` never does: its tasks all run on its loops) and cannot read the SwiftNIO peers' debug
# info.
#
# Build our servers with `-Xcc -gdwarf-4` (compare.sh does): valgrind 3.19 cannot read the DWARF 5 that clang
# emits for the C targets (COpenSSL, CEpollShim) and gives up ("Possibly corrupted debuginfo file").
#
# With BENCH_RECORD=1 the result is recorded as Benchmarks/results/instructions-roundtrip-SERVER-CONNSxSIZE.json
# (or instructions-connection-SERVER.json with MODE=churn; RESULT_NAME overrides the name); without it, the
# count is only printed.
#
# Environment: CONNS (10), SIZE (64), SENDFN (send,cepoll_send: libc's for the C servers, the shim's for ours), PORT (19111), C_REF_DIR; MODE=churn counts per
# churned connection instead (instructions-per-connection.sh).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 SERVER [server arguments]" >&2; exit 2; }
SERVER="$1"; shift
source "$(dirname "$0")/c-echo-lib.sh"
PORT="${PORT:-19111}"
c_echo_setup ir-per-rt loadgen

SERVER_ARGS=("$@")
if [ "${MODE:-pingpong}" = churn ]; then  # per connection: see instructions-per-connection.sh
    line=$(per_call connection "$(callgrind_calls 2 setsockopt churn 127.0.0.1 "$PORT" 2 16)" \
        "$(callgrind_calls 5 setsockopt churn 127.0.0.1 "$PORT" 5 16)")
    echo "$line"
    record_instructions "${RESULT_NAME:-instructions-connection-$(basename "$SERVER")}" connection "$line" \
        "$(command_text instructions-per-connection.sh)"
    exit
fi
C=${CONNS:-10}; S=${SIZE:-64}; F=${SENDFN:-send,cepoll_send}
line=$(per_call "round trip" "$(callgrind_calls 2 "$F" pingpong 127.0.0.1 "$PORT" "$C" "$S" 2)" \
    "$(callgrind_calls 5 "$F" pingpong 127.0.0.1 "$PORT" "$C" "$S" 5)")
echo "$line"
env_args=()
[ "$C" != 10 ] && env_args+=("CONNS=$C")
[ "$S" != 64 ] && env_args+=("SIZE=$S")
[ "$F" != send,cepoll_send ] && env_args+=("SENDFN=$F")
record_instructions "${RESULT_NAME:-instructions-roundtrip-$(basename "$SERVER")-${C}x${S}}" "round trip" "$line" \
    "$(command_text instructions-per-roundtrip.sh ${env_args[@]+"${env_args[@]}"})"
