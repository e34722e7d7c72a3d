#!/usr/bin/env bash
# Server CPU per echoed datagram: udp-echo-server (one loop) beside the C yardstick udp_echo_server and
# SwiftNIO's DatagramBootstrap echo (nio-udp-echo-server, when built), driven by udpgen. Server pinned to core
# 0, udpgen to core 1; servers alternate within each round (the machine is shared); ROUNDS rounds (3), then
# the median per server and its ratio to C, recorded as Benchmarks/results/udp-servers.json.
#
#     Benchmarks/udp-compare.sh [SECONDS] [FLOWS...]     (defaults: 5 s; 100 1000 flows; 64-byte datagrams)
#
# Needs `swift build -c release --product udp-echo-server` (or UDP_ECHO_SERVER pointing at a build), and for
# the SwiftNIO peer `swift build -c release --product nio-udp-echo-server` in Benchmarks/ (or
# NIO_UDP_ECHO_SERVER); builds the C reference (Benchmarks/c-reference, or C_ECHO) with make.
set -euo pipefail
cd "$(dirname "$0")/.."
# The load before the run adds its own, for record-result.py (as bench-lib.sh sets it).
export BENCH_LOADAVG_START="${BENCH_LOADAVG_START:-$(cut -d' ' -f1-3 /proc/loadavg)}"
COMMAND="Benchmarks/udp-compare.sh $*"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SECS=${1:-5}; shift || true
FLOWS=("${@:-100 1000}"); FLOWS=(${FLOWS[@]})
REF=${C_ECHO:-Benchmarks/c-reference}
make -s -C "$REF" udp_echo_server udpgen
SWIFT_SERVER=${UDP_ECHO_SERVER:-.build/release/udp-echo-server}
NIO_SERVER=${NIO_UDP_ECHO_SERVER:-Benchmarks/.build/release/nio-udp-echo-server}
ROUNDS=${ROUNDS:-3}
RESULTS=$(mktemp /tmp/udp-compare-results.XXXXXX)
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
    for round in $(seq "$ROUNDS"); do
        run_one c-udp_echo_server "$flows" "$REF/udp_echo_server"
        run_one udp-echo-server "$flows" "$SWIFT_SERVER" --loops 1 --host 127.0.0.1 --port
        if [ -x "$NIO_SERVER" ]; then run_one nio-udp-echo-server "$flows" "$NIO_SERVER" --loops 1 --host 127.0.0.1 --port; fi
    done
done | tee "$RESULTS"
echo "medians (µs of server CPU per datagram; ratio to C; datagrams lost per window):"
python3 - "$RESULTS" "$COMMAND" "$STARTED" "$SECS" "$ROUNDS" <<'PY'
import importlib.util, re, statistics, sys
spec = importlib.util.spec_from_file_location("record_result", "Benchmarks/record-result.py")
recorder = importlib.util.module_from_spec(spec); spec.loader.exec_module(recorder)
figures = {"seconds": float(sys.argv[4]), "rounds": int(sys.argv[5]), "flows": {}}
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)\s+flows=(\d+)\s+rps=\d+\s+server_cpu_us_per_dgram=([\d.]+)\s+lost=(\S*)", line)
    if m: rows.setdefault((int(m[2]), m[1]), []).append((float(m[3]), m[4]))
for flows in sorted({f for f, _ in rows}):
    c = statistics.median(x for x, _ in rows.get((flows, "c-udp_echo_server"), [(float("nan"), "")]))
    for name in ("c-udp_echo_server", "udp-echo-server", "nio-udp-echo-server"):
        if (flows, name) not in rows: continue
        values = [x for x, _ in rows[(flows, name)]]
        lost = ",".join(l for _, l in rows[(flows, name)])
        print(f"  flows={flows:<5} {name:<20} {statistics.median(values):.2f} ({statistics.median(values) / c:.2f}x C)  lost {lost}")
        figures["flows"].setdefault(str(flows), {})[name] = {
            "cost": statistics.median(values), "unit": "µs/datagram", "rounds": values,
            "lost": [int(l or 0) for _, l in rows[(flows, name)]]}
print("recorded", recorder.record("udp-servers", sys.argv[2].strip(), figures, driver="the C udpgen",
                                  started=sys.argv[3]))
PY
rm -f /tmp/udp-compare-server.$$ /tmp/udp-compare-gen.$$ "$RESULTS"
