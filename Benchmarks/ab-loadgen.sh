#!/usr/bin/env bash
# ab-loadgen.sh: server CPU per operation of a few servers side by side, driven by the C loadgen, the servers
# taking turns within each round (loadgen's rotation: see Benchmarks/c-reference/loadgen.c).
#
#     Benchmarks/ab-loadgen.sh 5 churn c=C old=.build-old/release/echo-server new=.build-lead/release/echo-server
#     Benchmarks/ab-loadgen.sh 4 pingpong 1000 64 c=C new=.build-lead/release/echo-server
#
# NAME=C stands for the C reference `echo_server` (Benchmarks/c-reference, or C_REF_DIR, built with make);
# any other binary is started with `--port P --loops 1`. Every round starts all the servers, pinned to core
# 0, and one loadgen on core 1 loads each in turn for slices of SLICE (0.5) s until each has had
# SECONDS_PER_SERVER (10) s of load after 1 s of warm-up; each server's CPU is read at both ends of each of its slices. Prints each
# round's figures, then, for every server after the first, its cost ÷ the first's over all the rounds' paired
# slices (a slice of one server and the first's slice of the same turn): the median and the quartiles. A
# same-binary pair (old=X new=X) shows what that spread is when nothing differs. Records nothing.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 ROUNDS churn|pingpong [CONNS SIZE] NAME=BIN..." >&2; exit 2; }
ROUNDS=$1; MODE=$2; shift 2
CONNS=16; SIZE=0
if [ "$MODE" = pingpong ]; then CONNS=$1; SIZE=$2; shift 2; fi
source "$(dirname "$0")/profile/c-echo-lib.sh"
c_echo_setup ab-loadgen loadgen echo_server
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
names=()
for round in $(seq "$ROUNDS"); do
    ports=(); pids=(); names=()
    for spec in "$@"; do
        name=${spec%%=*}; bin=${spec#*=}; port=$(free_port)
        if [ "$bin" = C ]; then
            taskset -c 0 "$C_BIN/echo_server" "$port" >"$TMP/$name.log" 2>&1 &
        else
            taskset -c 0 "$bin" --port "$port" --loops 1 >"$TMP/$name.log" 2>&1 &
        fi
        pids+=($!); ports+=("$port"); names+=("$name")
        for _ in $(seq 100); do ss -Htln "sport = :$port" 2>/dev/null | grep -q . && break; sleep 0.1; done
    done
    if [ "$MODE" = pingpong ]; then
        args=(pingpong 127.0.0.1 "$(IFS=,; echo "${ports[*]}")" "$CONNS" "$SIZE" "${SECONDS_PER_SERVER:-10}")
    else
        args=(churn 127.0.0.1 "$(IFS=,; echo "${ports[*]}")" "${SECONDS_PER_SERVER:-10}" 16)
    fi
    pending=64; [ "$CONNS" -ge 5000 ] && pending=128
    LOADGEN_SERVER_PID="$(IFS=,; echo "${pids[*]}")" LOADGEN_WARMUP=1 LOADGEN_MAX_PENDING=$pending \
        LOADGEN_SLICE="${SLICE:-0.5}" taskset -c 1 timeout $(( (${SECONDS_PER_SERVER:-10} + 1) * $# + 120 )) \
        "$C_BIN/loadgen" "${args[@]}" >"$TMP/round$round.log" 2>&1 || true
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
    for i in "${!names[@]}"; do
        line=$(grep "^RESULT .*target=$i " "$TMP/round$round.log" || true)
        echo "round $round: ${names[$i]} $(echo "$line" | grep -o 'srv_us_per_op=[0-9.]*' | cut -d= -f2 || echo failed) µs/op"
        echo "$line" >>"$TMP/${names[$i]}.results"
    done
done
python3 - "$TMP" "${names[@]}" <<'EOF'
import statistics, sys
directory, names = sys.argv[1], sys.argv[2:]
def fields(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
runs = {n: [fields(l) for l in open(f"{directory}/{n}.results") if l.startswith("RESULT")] for n in names}
for n in names:
    print(f"{n}: " + " ".join(r.get("srv_us_per_op", "?") for r in runs[n]) + " µs/op")
base = names[0]
for n in names[1:]:
    ratios = []
    for a, b in zip(runs[base], runs[n]):
        slices_a = [float(x) for x in a.get("slice_us", "").split(",") if x]
        slices_b = [float(x) for x in b.get("slice_us", "").split(",") if x]
        ratios += [y / x for x, y in zip(slices_a, slices_b) if x > 0]
    if len(ratios) >= 4:
        q1, median, q3 = statistics.quantiles(ratios, n=4)
        print(f"{n} ÷ {base}: median {median:.3f} of {len(ratios)} paired slices (quartiles {q1:.3f} to {q3:.3f})")
EOF
