#!/usr/bin/env bash
# Runs every EpollLoop-vs-SwiftNIO benchmark in release builds, then the memory-per-pending-timer probe.
# Extra arguments go to the benchmark plugin, e.g. ./run.sh --filter 'Timers.*'
# The first build (SwiftNIO + package-benchmark) takes several minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")"
swift package --disable-sandbox benchmark --grouping benchmark "$@"
swift run -c release timer-memory
