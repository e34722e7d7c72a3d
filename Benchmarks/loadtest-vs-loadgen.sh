#!/usr/bin/env bash
# The round trips per second `loadtest echo` (one loop) drives against the C echo_server, beside the
# independent C generator loadgen: 64-byte ping-pong, the server pinned to core 0 and the generator to core 1,
# the two generators alternating within each round (the machine is shared); ROUNDS rounds (3), then the
# median rate of each and the median of the rounds' loadtest ÷ loadgen ratios, recorded as
# Benchmarks/results/loadtest-vs-loadgen.json.
#
#     Benchmarks/loadtest-vs-loadgen.sh [SECONDS] [CONNECTIONS...]     (defaults: 4 s; 100 1000 connections)
#
# Needs `swift build -c release --product loadtest` (or LOADTEST pointing at a build); builds the C reference
# (Benchmarks/c-reference, or C_ECHO) with make. Both generators warm up for 1 s before their window.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench-lib.sh
source Benchmarks/bench-lib.sh  # for BENCH_LOADAVG_START, the load before the run adds its own
COMMAND="${ROUNDS:+ROUNDS=$ROUNDS }Benchmarks/loadtest-vs-loadgen.sh $*"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SECS=${1:-4}; shift || true
CONNS=("${@:-100 1000}"); CONNS=(${CONNS[@]})
REF=${C_ECHO:-Benchmarks/c-reference}
LOADTEST=${LOADTEST:-.build/release/loadtest}
ROUNDS=${ROUNDS:-3}
make -s -C "$REF" echo_server loadgen
RESULTS=$(mktemp /tmp/tcp-lt-results.XXXXXX)
SERVER_LOG=$(mktemp /tmp/tcp-lt-server.XXXXXX)
JSON=$(mktemp /tmp/tcp-lt-json.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -f "$RESULTS" "$SERVER_LOG" "$JSON"' EXIT

run_one() {  # name connections round
    local name=$1 conns=$2 round=$3 port=$((20000 + RANDOM % 20000)) rps errors
    taskset -c 0 "$REF/echo_server" "$port" > "$SERVER_LOG" 2>&1 &
    local pid=$!
    for _ in $(seq 50); do grep -q listening "$SERVER_LOG" 2>/dev/null && break; sleep 0.1; done
    if [ "$name" = loadgen ]; then
        local out; out=$(LOADGEN_WARMUP=1 timeout $((SECS + 60)) taskset -c 1 "$REF/loadgen" pingpong 127.0.0.1 "$port" "$conns" 64 "$SECS" | grep RESULT)
        rps=$(sed -n 's/.* rps=\([0-9.]*\).*/\1/p' <<<"$out"); errors=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<<"$out")
    else
        timeout $((SECS + 60)) taskset -c 1 "$LOADTEST" echo --host 127.0.0.1 --port "$port" --connections "$conns" \
            --size 64 --loops 1 --duration "$SECS" --warmup 1 --quiet --json "$JSON" > /dev/null || true
        read -r rps errors < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(round(r["requests_per_second"]), r["errors"]["total"])' "$JSON")
    fi
    kill -TERM $pid; wait $pid 2>/dev/null || true
    echo "$name conns=$conns round=$round rps=$rps errors=$errors"
}

for conns in "${CONNS[@]}"; do
    for round in $(seq "$ROUNDS"); do
        run_one loadgen "$conns" "$round"
        run_one loadtest "$conns" "$round"
    done
done | tee "$RESULTS"
python3 - "$RESULTS" "$COMMAND" "$STARTED" "$SECS" "$ROUNDS" <<'PY'
import importlib.util, re, statistics, sys
spec = importlib.util.spec_from_file_location("record_result", "Benchmarks/record-result.py")
recorder = importlib.util.module_from_spec(spec); spec.loader.exec_module(recorder)
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) conns=(\d+) round=(\d+) rps=([\d.]+) errors=(\d+)", line)
    if m:
        rows.setdefault((int(m[2]), m[1]), {})[int(m[3])] = (float(m[4]), int(m[5]))
figures = {"seconds": float(sys.argv[4]), "rounds": int(sys.argv[5]), "connections": {}}
for conns in sorted({c for c, _ in rows}):
    g, l = rows[(conns, "loadgen")], rows[(conns, "loadtest")]
    ratios = [l[r][0] / g[r][0] for r in sorted(g) if r in l and g[r][0] > 0]
    entry = {name: {"rate": statistics.median(v[0] for v in rows[(conns, name)].values()),
                    "rounds": [rows[(conns, name)][r][0] for r in sorted(rows[(conns, name)])],
                    "errors": sum(v[1] for v in rows[(conns, name)].values())} for name in ("loadgen", "loadtest")}
    entry["ratio"] = statistics.median(ratios)
    figures["connections"][str(conns)] = entry
    print(f"  {conns:>5} connections: loadgen {entry['loadgen']['rate']:,.0f}/s  loadtest {entry['loadtest']['rate']:,.0f}/s  "
          f"loadtest ÷ loadgen {entry['ratio']:.2f} (rounds {', '.join(f'{r:.2f}' for r in ratios)})")
print("recorded", recorder.record("loadtest-vs-loadgen", sys.argv[2].strip(), figures,
                                  driver="loadgen and loadtest in turn, against the C echo_server", started=sys.argv[3]))
PY
