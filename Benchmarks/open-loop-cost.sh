#!/usr/bin/env bash
# open-loop-cost.sh: what an open-loop load (`--rate`) costs the client per request, beside closed loop, for
# `loadtest http` and for the C floor `httpgen` (Benchmarks/c-reference: the least an HTTP keep-alive generator
# can do per request, sharing no code with loadtest), run alternately against one http-hello.
#
#     Benchmarks/open-loop-cost.sh [LOADTEST [HTTP_HELLO]]
#         (defaults: .build/release/loadtest and .build/release/http-hello, built if missing)
#     SLACKS="50us 1ms" RATES="10k" ROUNDS=5 Benchmarks/open-loop-cost.sh
#
# http-hello runs on core 0 with one loop; each client runs on core 1 with one loop, 50 connections, a 1 s
# warm-up and a 10 s window. A round runs, for loadtest then httpgen: closed loop, then each rate in RATES
# (10k 50k 90k) with each pacing slack in SLACKS (50us 500us: 0 or a time in us or ms; loadtest's --pacing-slack,
# httpgen's SLACK_US).
# Per run it prints the client's CPU per request (each tool's own figure: the CPU time of its loop thread over
# the window, divided by the responses), the rate achieved against the target, and latency p50/p90/p99 from
# the intended send time (closed loop: from the send); then, per client, load and slack, the medians over the
# rounds and the ratio of CPU per request to the same client's closed loop.
#
# Then, per load and slack, loadtest's CPU per request ÷ httpgen's: the median of the rounds' ratios (each
# round runs both, one after the other, so a round's ratio compares runs made under the same load). With
# BENCH_RECORD=1 the medians and ratios are recorded as Benchmarks/results/open-loop-cost.json (refused on a
# machine busier than its cores).
#
# Environment: ROUNDS (3), DURATION (10), CONNS (50), RATES, SLACKS, KEEP (a directory that keeps loadtest's
# --json of every run). Loopback only; every process it starts is pinned, the clients bounded by `timeout`, and
# each killed by its pid at exit (Benchmarks/bench-lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -le 2 ] || { echo "usage: $0 [LOADTEST [HTTP_HELLO]]" >&2; exit 2; }
# shellcheck source=bench-lib.sh
source Benchmarks/bench-lib.sh
loadtest_and_server http-hello "$@"
make -s -C Benchmarks/c-reference httpgen
HTTPGEN=$(realpath Benchmarks/c-reference/httpgen)
COMMAND="$(for v in ROUNDS DURATION CONNS RATES SLACKS; do [ -z "${!v:-}" ] || printf '%s=%q ' "$v" "${!v}"; done)"
COMMAND+="Benchmarks/open-loop-cost.sh $*"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ROUNDS=${ROUNDS:-3}; DURATION=${DURATION:-10}; CONNS=${CONNS:-50}
RATES=(${RATES:-10k 50k 90k}); SLACKS=(${SLACKS:-50us 500us})
TMP=$(mktemp -d /tmp/open-loop-cost.XXXXXX)
BENCH_NAME=open-loop-cost.sh
trap cleanup EXIT

PORT=$(free_port)
launch_server http-hello "$PORT" "$TMP/server.log" "$SERVER" --host 127.0.0.1 --port "$PORT" --loops 1

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds, -c $CONNS -d $DURATION"
printf '%-5s %-8s %-7s %-6s %9s %11s %9s %9s %9s %9s\n' round client load slack "cpu us/r" "achieved/s" \
    "of target" p50_us p90_us p99_us
# A run's figures as one row: round client load slack cpu achieved target p50 p90 p99 errors.
row() {
    python3 -c '
import sys
round, client, load, slack, cpu, achieved, target, p50, p90, p99, errors = sys.argv[1:]
share = f"{float(achieved) / float(target) * 100:.2f}%" if float(target) > 0 else "-"
cpu = "-" if cpu == "-" else f"{float(cpu):.2f}"
print(f"{round:<5} {client:<8} {load:<7} {slack:<6} {cpu:>9} {float(achieved):11.0f} {share:>9} {float(p50):9.1f} "
      f"{float(p90):9.1f} {float(p99):9.1f}" + (f"  errors {errors}" if errors != "0" else ""))' "$@"
}
slack_us() { python3 -c '
import sys
t = sys.argv[1]
print(0 if t == "0" else int(float(t[:-2]) * (1000 if t.endswith("ms") else 1)))' "$1"; }
rate_number() { python3 -c 'import sys; t = sys.argv[1].lower(); print(int(float(t[:-1]) * 1000 if t.endswith("k") else float(t)))' "$1"; }
run_loadtest() {  # round load slack
    local json="$TMP/$1-loadtest-$2-$3.json" rate=()
    rm -f "$json"
    [ "$2" = closed ] || rate=(--rate "$2" --pacing-slack "$3")
    timeout $((DURATION + 60)) taskset -c 1 "$LOADTEST" http --url "http://127.0.0.1:$PORT/" -c "$CONNS" --loops 1 \
        -d "$DURATION" --warmup 1 ${rate[@]+"${rate[@]}"} --quiet --json "$json" >"$TMP/client.log" 2>&1 &
    local pid=$!
    STARTED_PIDS+=("$pid")
    # A run with errors (a rate the server cannot take) exits non-zero but still writes its figures.
    wait "$pid" || [ -s "$json" ] || { echo "loadtest failed ($2 $3):" >&2; cat "$TMP/client.log" >&2
        exit 1; }
    untrack "$pid"
    # client_us_per_request is absent when no CPU reading covered the window (an overloaded run).
    row "$1" loadtest "$2" "$3" $(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
lat = r["latency_us"]
print(r.get("client_us_per_request", "-"), r["requests_per_second"], r.get("target_rate") or 0, lat["p50"],
      lat["p90"], lat["p99"], r["errors"]["total"])' "$json")
}
run_httpgen() {  # round load slack
    local args=()
    [ "$2" = closed ] || args=("$(rate_number "$2")" "$(slack_us "$3")")
    timeout $((DURATION + 60)) taskset -c 1 "$HTTPGEN" 127.0.0.1 "$PORT" "$CONNS" "$DURATION" ${args[@]+"${args[@]}"} \
        >"$TMP/client.log" 2>&1 &
    local pid=$!
    STARTED_PIDS+=("$pid")
    wait "$pid" || grep -q '^RESULT' "$TMP/client.log" || { echo "httpgen failed ($2 $3):" >&2
        cat "$TMP/client.log" >&2; exit 1; }
    untrack "$pid"
    row "$1" httpgen "$2" "$3" $(python3 -c '
import sys
f = dict(kv.split("=") for kv in open(sys.argv[1]).read().split("RESULT", 1)[1].split())
print(f["cpu_us_per_req"], f["rps"], f["target"], f["p50_us"], f["p90_us"], f["p99_us"], f["errors"])' "$TMP/client.log")
}
for round in $(seq "$ROUNDS"); do
    for client in loadtest httpgen; do
        "run_$client" "$round" closed - | tee -a "$TMP/table"
        for load in "${RATES[@]}"; do
            for slack in "${SLACKS[@]}"; do "run_$client" "$round" "$load" "$slack" | tee -a "$TMP/table"; done
        done
    done
done
[ -z "${KEEP:-}" ] || { mkdir -p "$KEEP"; cp "$TMP"/*.json "$KEEP"/; }
echo "# medians over $ROUNDS rounds; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$TMP/table" "$COMMAND" "$STARTED" "$CONNS" "$DURATION" "$ROUNDS" <<'PY'
import importlib.util, statistics, sys
spec = importlib.util.spec_from_file_location("record_result", "Benchmarks/record-result.py")
recorder = importlib.util.module_from_spec(spec); spec.loader.exec_module(recorder)
rows = [line.split() for line in open(sys.argv[1])]
def median(client, load, slack, column):
    values = [float(r[column].rstrip("%")) for r in rows
              if r[1] == client and r[2] == load and r[3] == slack and r[column] != "-"]
    return statistics.median(values) if values else float("nan")
cases = list(dict.fromkeys((r[2], r[3]) for r in rows))
print(f"{'client':<8} {'load':<7} {'slack':<6} {'cpu us/r':>9} {'x closed':>9} {'achieved/s':>11} {'of target':>9} "
      f"{'p50_us':>9} {'p90_us':>9} {'p99_us':>9}")
for client in ("loadtest", "httpgen"):
    closed = median(client, "closed", "-", 4)
    for load, slack in cases:
        cpu = median(client, load, slack, 4)
        share = median(client, load, slack, 6)
        share_text = "-" if share != share else f"{share:.2f}%"
        print(f"{client:<8} {load:<7} {slack:<6} {cpu:9.2f} {cpu / closed:9.2f} {median(client, load, slack, 5):11.0f} "
              f"{share_text:>9} {median(client, load, slack, 7):9.1f} {median(client, load, slack, 8):9.1f} "
              f"{median(client, load, slack, 9):9.1f}")
figures = {"connections": int(sys.argv[4]), "seconds": float(sys.argv[5]), "rounds": int(sys.argv[6]), "cases": []}
print(f"{'load':<7} {'slack':<6} {'loadtest ÷ httpgen, CPU per request (median of the rounds; the rounds)'}")
for load, slack in cases:
    def cpu(client, round):
        return next((float(r[4]) for r in rows if r[0] == round and r[1] == client and r[2] == load
                     and r[3] == slack and r[4] != "-"), None)
    ratios = []
    for round in dict.fromkeys(r[0] for r in rows):
        ours, theirs = cpu("loadtest", round), cpu("httpgen", round)
        if ours is not None and theirs:
            ratios.append(ours / theirs)
    ratio = statistics.median(ratios) if ratios else None
    print(f"{load:<7} {slack:<6} {'-' if ratio is None else f'{ratio:.3f}'} ({', '.join(f'{x:.3f}' for x in ratios)})")
    figures["cases"].append({
        "load": load, "slack": slack, "ratio": ratio, "round_ratios": ratios,
        **{client: {name: (None if value != value else value) for name, value in (
            ("cpu_us_per_request", median(client, load, slack, 4)),
            ("achieved_per_second", median(client, load, slack, 5)),
            ("p50_us", median(client, load, slack, 7)), ("p99_us", median(client, load, slack, 9)))}
           for client in ("loadtest", "httpgen")}})
try:
    print("recorded", recorder.record("open-loop-cost", sys.argv[2].strip(), figures, started=sys.argv[3],
                                      driver="loadtest http and httpgen in turn, against http-hello (one loop)"))
except recorder.LoadTooHigh as refusal:
    print(f"recorded nothing: {refusal}")
PY
