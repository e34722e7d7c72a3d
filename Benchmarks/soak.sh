#!/usr/bin/env bash
# The soak: echo-server, async-echo-server, http-hello over TLS and udp-echo-server, one process each, under a
# mixed load (steady echo, churn, TLS handshakes, UDP, idle connections coming and going, hostile clients) for
# SOAK_MINUTES (default 30). Every 10 s it records each server's RSS, open descriptors, loop utilisation and lag,
# and the load's errors, to SOAK_OUT/soak.csv (default .build/soak), and draws SOAK_OUT/soak.svg. It passes
# (exit 0) when RSS grows less than 1% after the first five minutes, descriptors return to their baseline at
# every pause of the load, the load counts no error, and every server exits 0 on SIGTERM. Benchmarks/soak.py
# says exactly what runs and how each criterion is measured.
#
#   SOAK_MINUTES=60 SOAK_OUT=/tmp/soak Benchmarks/soak.sh
#
# BENCH_RECORD=1 also records the run as Benchmarks/results/soak.json, from which docs/benchmarks.md's soak
# table and docs/benchmarks-soak.svg are rendered (`python3 Benchmarks/render-docs.py`).
#
# Needs: the release builds (made here), the C generators (`make -C Benchmarks/c-reference`, made here), openssl
# and python3. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
# The load before the run adds its own, for record-result.py (as bench-lib.sh sets it).
export BENCH_LOADAVG_START="${BENCH_LOADAVG_START:-$(cut -d' ' -f1-3 /proc/loadavg)}"
minutes="${SOAK_MINUTES:-30}"
out="${SOAK_OUT:-.build/soak}"
for product in echo-server async-echo-server http-hello udp-echo-server loadtest; do
    swift build -c release --product "$product" >/dev/null
done
make -s -C Benchmarks/c-reference >/dev/null
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
record=()
[ "${BENCH_RECORD:-0}" != 1 ] || record=(--record --command "SOAK_MINUTES=$minutes Benchmarks/soak.sh")
exec python3 Benchmarks/soak.py --minutes "$minutes" --out "$out" --bin .build/release --c-bin Benchmarks/c-reference \
    "${record[@]}"
