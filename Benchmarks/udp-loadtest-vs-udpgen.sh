#!/usr/bin/env bash
# The datagram rate `loadtest udp` (one loop) drives against the C udp_echo_server, beside the independent C
# generator udpgen: both closed loop with one 64-byte datagram in flight per flow, the server pinned to core 0
# and the generator to core 1, the two generators alternating within each round (the machine is shared);
# ROUNDS rounds (3), then the median rate of each and loadtest's share of udpgen's, recorded as
# Benchmarks/results/udp-loadtest-vs-udpgen.json.
#
#     Benchmarks/udp-loadtest-vs-udpgen.sh [SECONDS] [FLOWS...]     (defaults: 5 s; 100 1000 flows)
#
# Needs `swift build -c release --product loadtest` (or LOADTEST pointing at a build); builds the C reference
# (Benchmarks/c-reference, or C_ECHO) with make.
set -euo pipefail
cd "$(dirname "$0")/.."
# The load before the run adds its own, for record-result.py (as bench-lib.sh sets it).
export BENCH_LOADAVG_START="${BENCH_LOADAVG_START:-$(cut -d' ' -f1-3 /proc/loadavg)}"
COMMAND="Benchmarks/udp-loadtest-vs-udpgen.sh $*"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SECS=${1:-5}; shift || true
FLOWS=("${@:-100 1000}"); FLOWS=(${FLOWS[@]})
REF=${C_ECHO:-Benchmarks/c-reference}
make -s -C "$REF" udp_echo_server udpgen
LOADTEST=${LOADTEST:-.build/release/loadtest}
ROUNDS=${ROUNDS:-3}
RESULTS=$(mktemp /tmp/udp-lt-results.XXXXXX)
SERVER_LOG=$(mktemp /tmp/udp-lt-server.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -f "$RESULTS" "$SERVER_LOG"' EXIT

run_one() {  # name flows
    local name=$1 flows=$2 port=$((20000 + RANDOM % 20000)) rps lost
    taskset -c 0 "$REF/udp_echo_server" "$port" > "$SERVER_LOG" 2>&1 &
    local pid=$!
    for _ in $(seq 50); do grep -qi "port\|listening" "$SERVER_LOG" 2>/dev/null && break; sleep 0.1; done
    if [ "$name" = udpgen ]; then
        local out; out=$(timeout $((SECS + 30)) taskset -c 1 "$REF/udpgen" 127.0.0.1 "$port" "$flows" 64 "$SECS" | grep RESULT)
        rps=$(sed -n 's/.* rps=\([0-9.]*\).*/\1/p' <<<"$out"); lost=$(sed -n 's/.* lost=\([0-9]*\).*/\1/p' <<<"$out")
    else
        # udpgen counts a datagram lost after 200 ms and warms up for 1 s: the same here.
        local json; json=$(mktemp /tmp/udp-lt-json.XXXXXX)
        timeout $((SECS + 30)) taskset -c 1 "$LOADTEST" udp --port "$port" -c "$flows" -s 64 --loops 1 \
            --duration "$SECS" --warmup 1 --timeout 200ms --quiet --json "$json" > /dev/null
        read -r rps lost < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(round(r["requests_per_second"]), r["datagrams"]["lost"])' "$json")
        rm -f "$json"
    fi
    kill -TERM $pid; wait $pid 2>/dev/null || true
    echo "$name flows=$flows rps=$rps lost=$lost"
}

for flows in "${FLOWS[@]}"; do
    for round in $(seq "$ROUNDS"); do
        run_one udpgen "$flows"
        run_one loadtest "$flows"
    done
done | tee "$RESULTS"
echo "medians (datagrams/s echoed; loadtest as a share of udpgen; load average $(cut -d' ' -f1-3 /proc/loadavg)):"
python3 - "$RESULTS" "$COMMAND" "$STARTED" "$SECS" "$ROUNDS" <<'PY'
import importlib.util, re, statistics, sys
spec = importlib.util.spec_from_file_location("record_result", "Benchmarks/record-result.py")
recorder = importlib.util.module_from_spec(spec); spec.loader.exec_module(recorder)
rows, lost = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) flows=(\d+) rps=([\d.]+) lost=(\S*)", line)
    if m:
        rows.setdefault((int(m[2]), m[1]), []).append(float(m[3]))
        lost.setdefault((int(m[2]), m[1]), []).append(int(m[4] or 0))
figures = {"seconds": float(sys.argv[4]), "rounds": int(sys.argv[5]), "flows": {}}
for flows in sorted({f for f, _ in rows}):
    g = statistics.median(rows.get((flows, "udpgen"), [float("nan")]))
    l = statistics.median(rows.get((flows, "loadtest"), [float("nan")]))
    print(f"  flows={flows:<5} udpgen {g:,.0f}/s  loadtest udp {l:,.0f}/s  ({l / g * 100:.0f}% of udpgen)")
    figures["flows"][str(flows)] = {
        name: {"rate": statistics.median(rows[(flows, name)]), "rounds": rows[(flows, name)], "lost": lost[(flows, name)]}
        for name in ("udpgen", "loadtest") if (flows, name) in rows}
print("recorded", recorder.record("udp-loadtest-vs-udpgen", sys.argv[2].strip(), figures,
                                  driver="udpgen and loadtest in turn, against the C udp_echo_server", started=sys.argv[3]))
PY
