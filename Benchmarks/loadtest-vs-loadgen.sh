#!/usr/bin/env bash
# The round trips per second `loadtest echo` (one loop) drives against the C echo_server, beside the
# independent C generator loadgen: 64-byte ping-pong, the server pinned to core 0 and both generators to core
# 1, taking turns in half-second slices (Benchmarks/clients-taking-turns.py says how); ROUNDS rounds (3) of
# SLICES turns each (15), then the median rate of each and the median of the slices' paired loadtest ÷ loadgen
# ratios, recorded as Benchmarks/results/loadtest-vs-loadgen.json.
#
#     Benchmarks/loadtest-vs-loadgen.sh [SLICES] [CONNECTIONS...]     (defaults: 15; 100 1000 connections)
#
# Needs `swift build -c release --product loadtest` (or LOADTEST pointing at a build); builds the C reference
# (Benchmarks/c-reference, or C_REF_DIR) with make. SLICE sets a turn's length in seconds (0.5).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench-lib.sh
source Benchmarks/bench-lib.sh  # for BENCH_LOADAVG_START, the load before the run adds its own
COMMAND="${ROUNDS:+ROUNDS=$ROUNDS }Benchmarks/loadtest-vs-loadgen.sh $*"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
SLICES=${1:-15}; shift || true
CONNS=("${@:-100 1000}"); CONNS=(${CONNS[@]})
LOADTEST=${LOADTEST:-.build/release/loadtest}
ROUNDS=${ROUNDS:-3}
SLICE=${SLICE:-0.5}
RESULTS=$(mktemp /tmp/tcp-lt-results.XXXXXX)
trap 'rm -f "$RESULTS"' EXIT

for conns in "${CONNS[@]}"; do
    echo "$conns $(python3 Benchmarks/clients-taking-turns.py "$LOADTEST" "$conns" --rounds "$ROUNDS" \
        --slices "$SLICES" --slice "$SLICE" | grep '^RESULT ' | cut -c8-)" >>"$RESULTS"
done
python3 - "$RESULTS" "$COMMAND" "$STARTED" "$SLICES" "$ROUNDS" "$SLICE" <<'PY'
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("record_result", "Benchmarks/record-result.py")
recorder = importlib.util.module_from_spec(spec); spec.loader.exec_module(recorder)
figures = {"slices": int(sys.argv[4]), "rounds": int(sys.argv[5]), "slice_s": float(sys.argv[6]), "connections": {}}
for line in open(sys.argv[1]):
    conns, entry = line.split(" ", 1)
    entry = json.loads(entry)
    figures["connections"][conns] = entry
    print(f"  {int(conns):>5} connections: loadgen {entry['loadgen']['rate']:,.0f}/s  "
          f"loadtest {entry['loadtest']['rate']:,.0f}/s  loadtest ÷ loadgen {entry['ratio']:.2f} "
          f"(quartiles of {entry['paired_slices']} paired slices {entry['ratio_quartiles'][0]:.2f} to "
          f"{entry['ratio_quartiles'][1]:.2f}); CPU per round trip {entry['loadgen']['cpu_us_per_round_trip']:.2f} "
          f"and {entry['loadtest']['cpu_us_per_round_trip']:.2f} µs")
print("recorded", recorder.record("loadtest-vs-loadgen", sys.argv[2].strip(), figures,
                                  driver="loadgen and loadtest taking turns, against the C echo_server",
                                  started=sys.argv[3]))
PY
