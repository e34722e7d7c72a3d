#!/usr/bin/env bash
# instructions-per-connection.sh: user-space instructions a server spends per churned connection (accept, one
# echo, close), exactly.
#
#     Benchmarks/profile/instructions-per-connection.sh .build-compare/release/echo-server --loops 1
#     Benchmarks/profile/instructions-per-connection.sh Benchmarks/c-reference/echo_server PORT
#
# The server under `valgrind --tool=callgrind` through 2 s and 5 s of the C loadgen's churn mode (16
# connections in parallel, each closed with a reset); the difference in instructions divided by the
# difference in calls to `setsockopt` (one per accepted connection: TCP_NODELAY, in every server). The
# machinery is instructions-per-roundtrip.sh's; see there for the build flags valgrind needs. With
# BENCH_RECORD=1, recorded as Benchmarks/results/instructions-connection-SERVER.json.
MODE=churn exec "$(dirname "$0")/instructions-per-roundtrip.sh" "$@"
