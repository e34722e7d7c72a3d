#!/usr/bin/env bash
# rotation-check.sh: loadgen's rotation (several servers in turn) against three C echo servers on loopback,
# checked: every server gets a RESULT line with the same number of counted slices, one cost per slice, round
# trips (connections, for churn) and CPU in each, and no errors. A few seconds; .ci/run runs it.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
make -s -C "$HERE" echo_server loadgen
TMP="$(mktemp -d /tmp/rotation-check.XXXXXX)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
ports=()
for _ in 1 2 3; do
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$HERE/echo_server" "$port" >"$TMP/server-$port.log" 2>&1 &
    pids+=($!); ports+=("$port")
    for _ in $(seq 100); do ss -Htln "sport = :$port" 2>/dev/null | grep -q . && break; sleep 0.05; done
done
list() { local IFS=,; echo "$*"; }
check() { # MODE LOG: the checks above on loadgen's output
    python3 - "$@" <<'EOF'
import sys
mode, log = sys.argv[1], sys.argv[2]
rows = [dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
        for line in open(log) if line.startswith("RESULT ")]
def fail(why):
    sys.exit(f"rotation-check: {mode}: {why}\n" + open(log).read())
if [r.get("target") for r in rows] != ["0", "1", "2"]:
    fail("expected one RESULT line per server, targets 0, 1 and 2")
slices = {int(r["slices"]) for r in rows}
if len(slices) != 1 or min(slices) < 4:
    fail(f"every server should have the same number of counted slices, at least 4: {sorted(slices)}")
for r in rows:
    costs = [float(x) for x in r["slice_us"].split(",")]
    rate = float(r["rps" if mode == "pingpong" else "cps"])
    if len(costs) != int(r["slices"]) or min(costs) <= 0 or rate <= 0 or float(r["srv_us_per_op"]) <= 0:
        fail(f"server {r['target']}: a slice without round trips or CPU, or no rate")
    if r["errors"] != "0":
        fail(f"server {r['target']}: errors={r['errors']}")
print(f"rotation-check: {mode}: 3 servers, {slices.pop()} slices each, ok")
EOF
}
LOADGEN_SERVER_PID="$(list "${pids[@]}")" LOADGEN_SLICE=0.1 LOADGEN_WARMUP=0.2 \
    timeout 60 "$HERE/loadgen" pingpong 127.0.0.1 "$(list "${ports[@]}")" 20 64 0.5 >"$TMP/pingpong.log" 2>&1
check pingpong "$TMP/pingpong.log"
LOADGEN_SERVER_PID="$(list "${pids[@]}")" LOADGEN_SLICE=0.1 LOADGEN_WARMUP=0.2 \
    timeout 60 "$HERE/loadgen" churn 127.0.0.1 "$(list "${ports[@]}")" 0.5 4 >"$TMP/churn.log" 2>&1
check churn "$TMP/churn.log"
