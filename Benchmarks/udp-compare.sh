#!/usr/bin/env bash
# Server CPU per echoed datagram: udp-echo-server (one loop) beside the C yardstick udp_echo_server, driven by
# udpgen. Server pinned to core 0, udpgen to core 1; servers alternate within one run (the machine is shared).
#
#     Benchmarks/udp-compare.sh [SECONDS] [FLOWS...]     (defaults: 5 s; 100 1000 flows; 64-byte datagrams)
#
# Needs `swift build -c release --product udp-echo-server` and `make` in ../shared/reference/c-echo.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-5}; shift || true
FLOWS=("${@:-100 1000}"); FLOWS=(${FLOWS[@]})
REF=${C_ECHO:-../shared/reference/c-echo}
SWIFT_SERVER=${UDP_ECHO_SERVER:-.build/release/udp-echo-server}
TICK=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_one() {  # name flows command...
    local name=$1 flows=$2; shift 2
    local port=$((20000 + RANDOM % 20000))
    taskset -c 0 "$@" "$port" > /tmp/udp-compare-server.$$ 2>&1 &
    local pid=$!
    for _ in $(seq 50); do grep -q "port\|listening" /tmp/udp-compare-server.$$ 2>/dev/null && break; sleep 0.1; done
    # udpgen warms up for 1 s (excluded from its numbers): sample the server's CPU over the measured window.
    taskset -c 1 "$REF/udpgen" 127.0.0.1 "$port" "$flows" 64 "$SECS" > /tmp/udp-compare-gen.$$ &
    local gen=$!
    sleep 1
    local before; before=$(cpu_ticks $pid)
    sleep "$SECS"
    local after; after=$(cpu_ticks $pid)
    wait $gen
    kill -TERM $pid; wait $pid 2>/dev/null || true
    local result; result=$(grep RESULT /tmp/udp-compare-gen.$$)
    local rps; rps=$(sed -n 's/.* rps=\([0-9.]*\).*/\1/p' <<<"$result")
    local lost; lost=$(sed -n 's/.* lost=\([0-9]*\).*/\1/p' <<<"$result")
    awk -v n="$name" -v f="$flows" -v t=$((after - before)) -v hz="$TICK" -v r="$rps" -v s="$SECS" -v l="$lost" \
        'BEGIN { printf "%-16s flows=%-5d rps=%-8d server_cpu_us_per_dgram=%.2f lost=%s\n", n, f, r, (t / hz) * 1e6 / (r * s), l }'
}

for flows in "${FLOWS[@]}"; do
    for round in 1 2; do
        run_one c-udp_echo_server "$flows" "$REF/udp_echo_server"
        run_one udp-echo-server "$flows" "$SWIFT_SERVER" --loops 1 --host 127.0.0.1 --port
    done
done
rm -f /tmp/udp-compare-server.$$ /tmp/udp-compare-gen.$$
