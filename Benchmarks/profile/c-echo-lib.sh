# c-echo-lib.sh: sourced by the callgrind scripts (and ab-loadgen.sh). `c_echo_setup NAME TARGET...` makes a
# scratch directory ($TMP, removed at exit with any server still running) and builds TARGETs of the C
# reference (Benchmarks/c-reference, or C_REF_DIR) with make; $C_BIN is where they are.
c_echo_setup() {
    local name=$1; shift
    HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    BENCH_DIR="$(cd "$HERE/.." && pwd)"
    ROOT_DIR="$(cd "$BENCH_DIR/.." && pwd)"
    C_BIN="${C_REF_DIR:-$BENCH_DIR/c-reference}"
    # The load before the run adds its own, for record-result.py (as bench-lib.sh sets it).
    export BENCH_LOADAVG_START="${BENCH_LOADAVG_START:-$(cut -d' ' -f1-3 /proc/loadavg)}"
    TMP="$(mktemp -d "/tmp/$name.XXXXXX")"
    trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
    make -s -C "$C_BIN" "$@" >/dev/null
}

# `server_command PORT` fills the array SERVER_COMMAND: $SERVER with the array SERVER_ARGS, where an argument
# `PORT` becomes the port; without one, `--port PORT` is appended (ours and the SwiftNIO peers; the C
# servers take the port as their first argument: `echo_server PORT`).
server_command() {
    local port=$1
    SERVER_COMMAND=("$SERVER")
    if [[ " ${SERVER_ARGS[*]-} " == *" PORT "* ]]; then
        SERVER_COMMAND+=("${SERVER_ARGS[@]/#PORT/$port}")
    else
        SERVER_COMMAND+=(--port "$port" ${SERVER_ARGS[@]+"${SERVER_ARGS[@]}"})
    fi
}

# `callgrind_calls SECONDS FUNCTION LOADGEN-ARGUMENTS...` runs the server (server_command $PORT) under
# callgrind while the C loadgen runs with the arguments given, then prints the program's instructions and
# its calls to FUNCTION. `per_call UNIT "A" "B"` prints the instructions per call between two such runs:
# start-up and shutdown cancel out.
callgrind_calls() {
    local seconds=$1 function=$2 out="$TMP/callgrind.$1"; shift 2
    server_command "$PORT"
    valgrind --tool=callgrind --callgrind-out-file="$out" "${SERVER_COMMAND[@]}" >"$TMP/server.log" 2>&1 &
    local pid=$!
    for _ in $(seq 150); do grep -q listening "$TMP/server.log" && break; sleep 0.2; done
    timeout $((seconds + 30)) "$C_BIN/loadgen" "$@" >/dev/null 2>&1 || true
    kill -INT "$pid"; wait "$pid" 2>/dev/null || true
    python3 "$HERE/callgrind-calls.py" "$out" "$function"
}
per_call() {
    python3 -c "import sys; u=sys.argv[1]; a,b=[int(x) for x in sys.argv[2].split()],[int(x) for x in sys.argv[3].split()]; print(f'{(b[0]-a[0])/(b[1]-a[1]):.0f} instructions per {u} ({b[1]-a[1]} {u}s)')" "$@"
}

# `record_instructions NAME UNIT LINE COMMAND` records per_call's LINE as Benchmarks/results/NAME.json
# (record-result.py, only with BENCH_RECORD=1): the instructions per UNIT, the operations counted, the server
# and the command, marked as figures that do not depend on the machine's load.
record_instructions() {
    local name=$1 unit=$2 line=$3 command=$4
    python3 "$BENCH_DIR/record-result.py" "$name" --command "$command" --driver "${DRIVER_TEXT:-C loadgen}" --load-independent \
        --figure "server=$(basename "$SERVER")" --figure "unit=$unit" \
        --figure "instructions=$(cut -d' ' -f1 <<<"$line")" \
        --figure "operations=$(sed -n 's/.*(\([0-9]*\) .*/\1/p' <<<"$line")" >&2
}

# The command line that reproduces this run, as run from the repository root.
command_text() {
    local script=$1; shift
    local env_text="" v
    [ -z "${RESULT_NAME:-}" ] || env_text="RESULT_NAME=$RESULT_NAME "
    for v in "$@"; do env_text+="$v "; done
    echo "${env_text}Benchmarks/profile/$script $(realpath -s --relative-to="$ROOT_DIR" "$SERVER" 2>/dev/null || echo "$SERVER")${SERVER_ARGS[*]+ ${SERVER_ARGS[*]}}"
}
