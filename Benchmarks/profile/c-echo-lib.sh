# c-echo-lib.sh: sourced by the callgrind counting scripts. `c_echo_setup NAME TARGET...` makes a scratch
# directory ($TMP, removed at exit with any server still running), copies ../shared/reference/c-echo (or
# C_REF_DIR) into it and builds TARGETs there, so the shared reference stays read-only.
c_echo_setup() {
    local name=$1; shift
    HERE="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
    C_REF_DIR="${C_REF_DIR:-$HERE/../../../shared/reference/c-echo}"
    TMP="$(mktemp -d "/tmp/$name.XXXXXX")"
    trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT
    cp -r "$C_REF_DIR" "$TMP/c-echo" && chmod -R u+w "$TMP/c-echo"
    make -s -C "$TMP/c-echo" "$@" >/dev/null
}

# `callgrind_calls SECONDS FUNCTION LOADGEN-ARGUMENTS...` runs $SERVER (with --port $PORT and the array
# SERVER_ARGS) under callgrind while the C loadgen runs with the arguments given, then prints the program's
# instructions and its calls to FUNCTION. `per_call UNIT "A" "B"` prints the instructions per call between two
# such runs: start-up and shutdown cancel out.
callgrind_calls() {
    local seconds=$1 function=$2 out="$TMP/callgrind.$1"; shift 2
    valgrind --tool=callgrind --callgrind-out-file="$out" "$SERVER" --port "$PORT" "${SERVER_ARGS[@]}" >"$TMP/server.log" 2>&1 &
    local pid=$!
    for _ in $(seq 150); do grep -q listening "$TMP/server.log" && break; sleep 0.2; done
    timeout $((seconds + 30)) "$TMP/c-echo/loadgen" "$@" >/dev/null 2>&1 || true
    kill -INT "$pid"; wait "$pid" 2>/dev/null || true
    python3 "$HERE/callgrind-calls.py" "$out" "$function"
}
per_call() {
    python3 -c "import sys; u=sys.argv[1]; a,b=[int(x) for x in sys.argv[2].split()],[int(x) for x in sys.argv[3].split()]; print(f'{(b[0]-a[0])/(b[1]-a[1]):.0f} instructions per {u} ({b[1]-a[1]} {u}s)')" "$@"
}
