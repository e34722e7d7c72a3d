#!/usr/bin/env bash
# ab-loadgen.sh: server CPU per operation of a few servers side by side, driven by the C loadgen, the servers
# alternating within each round (the machine is noisy: read the ratios within a round, not across rounds).
#
#     Benchmarks/ab-loadgen.sh 5 churn c=C old=.build-old/release/echo-server new=.build-lead/release/echo-server
#     Benchmarks/ab-loadgen.sh 4 pingpong 1000 64 c=C new=.build-lead/release/echo-server
#
# NAME=C stands for the C reference `echo_server` (Benchmarks/c-reference, or C_REF_DIR, built with make);
# any other binary is started with `--port P --loops 1`. Each server runs pinned to core
# 0 and loadgen to core 1 for a 10 s window after 1 s of warm-up; the server's CPU comes from loadgen's
# `RESULT` line (LOADGEN_SERVER_PID). Prints each run, then every server's figures in round order.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 ROUNDS churn|pingpong [CONNS SIZE] NAME=BIN..." >&2; exit 2; }
ROUNDS=$1; MODE=$2; shift 2
CONNS=0; SIZE=0
if [ "$MODE" = pingpong ]; then CONNS=$1; SIZE=$2; shift 2; fi
source "$(dirname "$0")/profile/c-echo-lib.sh"
c_echo_setup ab-loadgen loadgen echo_server
declare -A figures
for round in $(seq "$ROUNDS"); do
    for spec in "$@"; do
        name=${spec%%=*}; bin=${spec#*=}; port=$((30000 + RANDOM % 20000))
        if [ "$bin" = C ]; then
            taskset -c 0 "$C_BIN/echo_server" "$port" >"$TMP/server.log" 2>&1 &
        else
            taskset -c 0 "$bin" --port "$port" --loops 1 >"$TMP/server.log" 2>&1 &
        fi
        pid=$!
        for _ in $(seq 100); do grep -qi "listening\|port" "$TMP/server.log" && break; sleep 0.1; done
        if [ "$MODE" = pingpong ]; then args=(pingpong 127.0.0.1 "$port" "$CONNS" "$SIZE" 10); else args=(churn 127.0.0.1 "$port" 10 16); fi
        pending=64; [ "$CONNS" -ge 5000 ] && pending=128
        result=$(LOADGEN_SERVER_PID=$pid LOADGEN_WARMUP=1 LOADGEN_MAX_PENDING=$pending taskset -c 1 \
            timeout 60 "$C_BIN/loadgen" "${args[@]}" 2>&1 | grep '^RESULT' || true)
        kill "$pid"; wait "$pid" 2>/dev/null || true
        us=$(python3 -c "
import sys
f = dict(kv.split('=', 1) for kv in sys.argv[1].split()[1:] if '=' in kv)
print('%.2f' % (float(f['srv_cpu']) / 100 / float(f.get('rps', f.get('cps'))) * 1e6) if f else 'failed')" "$result")
        figures[$name]="${figures[$name]:-} $us"
        echo "round $round: $name $us µs/op"
    done
done
for spec in "$@"; do name=${spec%%=*}; echo "$name:${figures[$name]}"; done
