#!/usr/bin/env bash
# Did a change make the server slower? Runs ROUNDS alternating rounds of one loadtest workload against two
# servers, BASE and NEW, keeps each run's JSON report, then `loadtest compare BASE NEW` over them and prints its
# verdict per figure (faster, slower or no detectable change, with the confidence interval). Each run starts
# its server on a fresh port pinned to core 0 (taskset) and loadtest on core 1 with one loop; which side runs
# first alternates from round to round, so that a drift of the machine falls on both alike.
#
#     Benchmarks/compare-runs.sh ref main              # main's echo-server (base) against the working tree's (new)
#     Benchmarks/compare-runs.sh peer c                # the C echo_server (base) against our echo-server (new)
#     Benchmarks/compare-runs.sh peer async-echo-server  # echo-server (base) against async-echo-server (new)
#     ROUNDS=3 DURATION=2 WARMUP=500ms Benchmarks/compare-runs.sh peer c -- echo --port {port} -c 10 -s 1k
#
# `ref REF` builds PRODUCT (default echo-server) at git ref REF, from `git archive`, in a scratch directory kept
# for the next run (BASE_BUILD, default .build-compare-runs/COMMIT), and the working tree's PRODUCT as
# loadtest_and_server does (.build/release). `peer c` is Benchmarks/c-reference's echo_server; `peer PRODUCT`
# another of this package's servers, run as the base against PRODUCT. One loadtest, the working tree's, drives
# both sides. After `--` comes the workload (default `echo --port {port} -c 100 -s 64`); {port} is replaced by
# the server's port. DURATION (default 5 s) and WARMUP (1 s) are each run's; ROUNDS defaults to 11, the runs
# per side `loadtest compare` recommends (RunComparison.recommendedRuns). LOADTEST, SERVER (the new side's
# binary, given with LOADTEST) and BASE_SERVER (the base side's) skip building those. The reports and the comparison (compare.txt, .json, .svg) are
# kept in OUT (default /tmp/compare-runs-DATE). CONFIDENCE (default 95) and FAIL_IF (a `--fail-if` value, such
# as slower:p99,throughput; exit status 1 when it holds) pass through to `loadtest compare`.
#
# With BENCH_RECORD=1 the comparison's JSON is recorded as Benchmarks/results/RESULT_NAME.json (default
# compare-runs-BASE-vs-NEW) through record-result.py, with the command, the date, the load average before the
# first round and after the last, and what ran on each side; its chart goes next to it as RESULT_NAME.svg.
# record-result.py refuses a run whose 1-minute load average, before or after, was above the machine's cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=compare-runs.sh
# shellcheck source=bench-lib.sh
source Benchmarks/bench-lib.sh

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
MODE=$1 WHAT=$2
shift 2
if [ $# -gt 0 ]; then
    [ "$1" = -- ] || usage
    shift
fi
WORKLOAD=("$@")
[ ${#WORKLOAD[@]} -gt 0 ] || WORKLOAD=(echo --port '{port}' -c 100 -s 64)
ROUNDS=${ROUNDS:-11} DURATION=${DURATION:-5} WARMUP=${WARMUP:-1} PRODUCT=${PRODUCT:-echo-server}
OUT=${OUT:-/tmp/compare-runs-$(date -u +%Y%m%d-%H%M%S)}
COMMAND="$(for v in ROUNDS DURATION WARMUP PRODUCT CONFIDENCE FAIL_IF; do
    [ -z "${!v:-}" ] || printf '%s=%q ' "$v" "${!v}"; done)Benchmarks/compare-runs.sh $MODE $WHAT${*:+ -- $*}"
TMP=$(mktemp -d)
trap cleanup EXIT
mkdir -p "$OUT/base" "$OUT/new"

# Each side's server, as a command whose {port} is replaced, and its name for the verdict and the record.
ours() { echo "$1 --port {port} --host 127.0.0.1 --loops 1"; }
NEW_PRODUCT=$PRODUCT
[ "$MODE" != peer ] || [ "$WHAT" = c ] || NEW_PRODUCT=$WHAT
if [ -n "${LOADTEST:-}" ]; then
    loadtest_and_server "$NEW_PRODUCT" "$LOADTEST" ${SERVER:+"$SERVER"}
else
    loadtest_and_server "$NEW_PRODUCT"
fi
NEW_CMD=$(ours "$SERVER") NEW_NAME=$NEW_PRODUCT
case "$MODE" in
    ref)
        commit=$(git rev-parse --verify "$WHAT^{commit}")
        if [ -z "${BASE_SERVER:-}" ]; then
            build="${BASE_BUILD:-.build-compare-runs/$commit}"
            if [ ! -x "$build/.build/release/$PRODUCT" ]; then
                log "building $PRODUCT at $WHAT ($commit) in $build"
                mkdir -p "$build"
                git archive "$commit" | tar -x -C "$build"
                (cd "$build" && swift build -c release --product "$PRODUCT" >/dev/null)
            fi
            BASE_SERVER="$build/.build/release/$PRODUCT"
        fi
        BASE_CMD=$(ours "$(realpath "$BASE_SERVER")") BASE_NAME="$PRODUCT@$WHAT" NEW_NAME="$PRODUCT@working-tree" ;;
    peer)
        if [ "$WHAT" = c ]; then
            make -s -C Benchmarks/c-reference echo_server
            BASE_CMD="$(realpath Benchmarks/c-reference/echo_server) {port}" BASE_NAME=c-echo_server
        else
            new_server=$SERVER
            loadtest_and_server "$PRODUCT" "$LOADTEST" ${BASE_SERVER:+"$BASE_SERVER"}
            BASE_CMD=$(ours "$SERVER") BASE_NAME=$PRODUCT SERVER=$new_server
        fi ;;
    *) usage ;;
esac

# run SIDE ROUND: one run of the workload against SIDE's server on a fresh port, its report in OUT/SIDE.
run() {
    local side=$1 round=$2 port cmd name words
    port=$(free_port)
    if [ "$side" = base ]; then cmd=$BASE_CMD name=$BASE_NAME; else cmd=$NEW_CMD name=$NEW_NAME; fi
    read -r -a words <<<"${cmd//\{port\}/$port}"
    launch_server "$name" "$port" "$TMP/$side.log" "${words[@]}"
    taskset -c 1 timeout --kill-after=5 120 "$LOADTEST" "${WORKLOAD[@]//\{port\}/$port}" --loops 1 \
        -d "$DURATION" --warmup "$WARMUP" --server-pid "$SERVER_PID" -q --json "$OUT/$side/run$round.json" \
        >"$TMP/loadtest.log" 2>&1 || { log "$side round $round: loadtest failed:"; cat "$TMP/loadtest.log" >&2; exit 1; }
    stop_server
    log "round $round $side ($name): $(python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
print("%.0f/s, errors %d" % (r["requests_per_second"], r["errors"]["total"]))' "$OUT/$side/run$round.json")"
}

log "$ROUNDS rounds: base $BASE_NAME, new $NEW_NAME; workload: loadtest ${WORKLOAD[*]}; reports in $OUT"
# The load before the first round, after the builds: the work on the machine that the runs compete with.
BENCH_LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
export BENCH_LOADAVG_START
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then run base "$round"; run new "$round"; else run new "$round"; run base "$round"; fi
done

status=0
"$LOADTEST" compare "$OUT/base" "$OUT/new" --confidence "${CONFIDENCE:-95}" ${FAIL_IF:+--fail-if "$FAIL_IF"} \
    --json "$OUT/compare.json" --svg "$OUT/compare.svg" | tee "$OUT/compare.txt" || status=$?
[ "$status" -le 1 ] || exit "$status"
echo "base: $BASE_NAME; new: $NEW_NAME; load average before $BENCH_LOADAVG_START, after" \
    "$(cut -d' ' -f1-3 /proc/loadavg) ($(nproc --all) cores); reports and comparison in $OUT"

name=${RESULT_NAME:-compare-runs-$BASE_NAME-vs-$NEW_NAME}
name=${name//[^A-Za-z0-9._-]/-}
recorded=$(python3 Benchmarks/record-result.py "$name" --command "$COMMAND" --started "$STARTED" \
    --driver "loadtest ${WORKLOAD[*]} --loops 1 -d $DURATION --warmup $WARMUP (core 1), $ROUNDS alternating rounds" \
    --note "base: $BASE_NAME; new: $NEW_NAME (server on core 0)" --figures-json "$OUT/compare.json")
echo "$recorded"
case "$recorded" in
    "recorded nothing"*) ;;
    *) path=${recorded#recorded }; cp "$OUT/compare.svg" "${path%.json}.svg"; echo "and its chart as ${path%.json}.svg" ;;
esac
exit "$status"
