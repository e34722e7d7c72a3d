#!/usr/bin/env bash
# tls-instructions-per-request.sh: user-space instructions an HTTPS "hello" server spends per keep-alive
# request (wrk -t1 -c100), exactly, and where they go.
#
#     Benchmarks/profile/tls-instructions-per-request.sh ours      # http-hello --tls-cert/--tls-key
#     Benchmarks/profile/tls-instructions-per-request.sh nginx     # one nginx process (master_process off)
#     Benchmarks/profile/tls-instructions-per-request.sh nio       # nio-https-server
#     Benchmarks/profile/tls-instructions-per-request.sh ours-plain
#
# Runs the server under `valgrind --tool=callgrind` twice, driven by wrk for 4 s and for 10 s (SHORT, LONG), and divides the
# difference in instructions by the difference in requests wrk completed: start-up, the 100 handshakes and
# shutdown cancel out. The longer run is also profiled in a steady window alone (callgrind_control dumps
# a part 30% of the way in and another at 80%; the second is the window) and the top functions by inclusive cost are printed as
# instructions per request (share of the window × the per-request figure). Uses a throw-away ECDSA P-256
# certificate; Swift symbols are demangled with `swift demangle` when it is there. Binaries: ROOT_BUILD
# (../../.build-compare) and BENCH_BUILD (../.build-peers), release.
#
# With BENCH_RECORD=1 the count is recorded as Benchmarks/results/instructions-tls-DRIVE-SERVER.json
# (record-result.py; RESULT_NAME for another name), which docs/benchmarks.md's TLS instruction table is rendered
# from; without it, the count is only printed.
#
# Environment: TOP (15), PORT (19443), KEEP (a directory to keep the callgrind files in), SHORT and LONG (the two
# runs' seconds, 4 and 10; a loaded machine may need 10 and 20 for keep-alive), CONNS (the connections or
# clients below, 100 for keepalive and 16 otherwise: fewer let a loaded machine, on which valgrind runs slowly,
# finish the keep-alive handshakes early and leave fewer handshakes unfinished at the end of a run), DRIVE:
#   keepalive (default)  wrk -t1 -c100: per request
#   close                wrk -t1 -c16 -H 'Connection: close': per connection (wrk resumes TLS 1.3 sessions)
#   resume               loadtest http -c 16 --tls-resume -H 'Connection: close' (ROOT_BUILD's loadtest): per
#                        connection, each a resumed handshake the client asked for
#   full                 16 × openssl s_time -new -www /: per connection, full handshakes
set -euo pipefail
COMMAND="$(for v in DRIVE CONNS SHORT LONG; do [ -z "${!v:-}" ] || printf '%s=%s ' "$v" "${!v}"; done)Benchmarks/profile/tls-instructions-per-request.sh ${1:-}"
[ $# -eq 1 ] || { echo "usage: $0 ours|ours-plain|nginx|nio" >&2; exit 2; }
SERVER="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT_BUILD="${ROOT_BUILD:-$HERE/../../.build-compare}"
BENCH_BUILD="${BENCH_BUILD:-$HERE/../.build-peers}"
PORT="${PORT:-19443}"
TOP="${TOP:-15}"
DRIVE="${DRIVE:-keepalive}"
CONNS="${CONNS:-$([ "$DRIVE" = keepalive ] && echo 100 || echo 16)}"
SHORT="${SHORT:-4}"  # seconds of the two runs; longer where a loaded machine leaves the short one no time
LONG="${LONG:-10}"   # past its 100 handshakes under valgrind
TMP="$(mktemp -d /tmp/tls-ir.XXXXXX)"
VG_PID=""
trap '[ -z "$VG_PID" ] || kill -KILL "$VG_PID" 2>/dev/null || true; rm -rf "$TMP"' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -keyout "$TMP/key.pem" -out "$TMP/cert.pem" >/dev/null 2>&1
# shellcheck source=../bench-lib.sh
BENCH_NAME=tls-instructions-per-request.sh source "$HERE/../bench-lib.sh"
URL="https://127.0.0.1:$PORT/"
# valgrind 3.19 cannot read the Swift toolchain's DWARF 5 debug info: profile copies without it (the symbol
# table stays, so functions keep their names).
stripped() { objcopy --strip-debug "$1" "$TMP/$(basename "$1")" && echo "$TMP/$(basename "$1")"; }
case "$SERVER" in
    ours) CMD=("$(stripped "$ROOT_BUILD/release/http-hello")" --port "$PORT" --host 127.0.0.1 --loops 1 --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem") ;;
    ours-plain) CMD=("$(stripped "$ROOT_BUILD/release/http-hello")" --port "$PORT" --host 127.0.0.1 --loops 1); URL="http://127.0.0.1:$PORT/" ;;
    nio) CMD=("$(stripped "$BENCH_BUILD/release/nio-https-server")" --port "$PORT" --host 127.0.0.1 --cert "$TMP/cert.pem" --key "$TMP/key.pem") ;;
    nginx)
        write_nginx_conf "$TMP/nginx" "$PORT" "$TMP/cert.pem" "$TMP/key.pem"
        sed -i 's/^daemon off;/daemon off;\nmaster_process off;/' "$TMP/nginx/nginx.conf"
        CMD=(nginx -e "$TMP/nginx/logs/error.log" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf") ;;
    *) echo "unknown server $SERVER" >&2; exit 2 ;;
esac

drive() { # seconds: the load, on core 1, until it ends by itself
    local i
    case "$DRIVE" in
        keepalive) taskset -c 1 timeout $(($1 + 60)) wrk -t1 "-c$CONNS" -d "${1}s" "$URL" >"$TMP/wrk.log" 2>&1 || true ;;
        close) taskset -c 1 timeout $(($1 + 60)) wrk -t1 "-c$CONNS" -H 'Connection: close' -d "${1}s" "$URL" >"$TMP/wrk.log" 2>&1 || true ;;
        resume) taskset -c 1 timeout $(($1 + 60)) "$ROOT_BUILD/release/loadtest" http --url "$URL" --insecure --tls-resume \
                    -H 'Connection: close' -c "$CONNS" --loops 1 --warmup 0 --duration "${1}s" --json "$TMP/loadtest.json" \
                    --quiet >"$TMP/loadtest.log" 2>&1 || true ;;
        full)
            for i in $(seq 1 "$CONNS"); do
                taskset -c 1 timeout $(($1 + 60)) openssl s_time -connect "127.0.0.1:$PORT" -new -www / -time "$1" >"$TMP/s_time.$i.log" 2>&1 &
            done
            wait ;;
        *) echo "DRIVE is keepalive, close, resume or full" >&2; exit 2 ;;
    esac
}

run() { # seconds out -> "instructions requests"
    local seconds="$1" out="$2" requests
    rm -f "$TMP"/s_time.*.log
    taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$out" "${CMD[@]}" >"$TMP/server.log" 2>&1 &
    VG_PID=$!
    for _ in $(seq 300); do ss -Htln "sport = :$PORT" | grep -q . && break; sleep 0.2; done
    drive "$seconds" &
    local w=$!
    if [ "$seconds" -ge "$LONG" ]; then
        sleep $((LONG * 3 / 10)); callgrind_control -d "$VG_PID" >/dev/null   # part 1: start-up, handshakes
        sleep $((LONG / 2)); callgrind_control -d "$VG_PID" >/dev/null        # part 2: the steady window
    fi
    wait "$w" || true
    kill -TERM "$VG_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$VG_PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$VG_PID" 2>/dev/null || true
    wait "$VG_PID" 2>/dev/null || true
    VG_PID=""
    if [ "$DRIVE" = full ]; then
        requests="$(cat "$TMP"/s_time.*.log | awk '/connections in .* real seconds/ { n += $1 } END { print n + 0 }')"
    elif [ "$DRIVE" = resume ]; then
        requests="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("requests", 0))' "$TMP/loadtest.json" 2>/dev/null || echo 0)"
        rm -f "$TMP/loadtest.json"
    else
        requests="$(awk '/requests in/ { print $1 }' "$TMP/wrk.log")"
    fi
    local f total=0
    for f in "$out" "$out".*; do
        [ -f "$f" ] || continue
        total=$((total + $(python3 "$HERE/callgrind-calls.py" "$f" none | cut -d' ' -f1)))
    done
    echo "$total $requests"
}
a=($(run "$SHORT" "$TMP/callgrind.short"))
b=($(run "$LONG" "$TMP/callgrind.long"))
PER="$(python3 -c 'import sys; a,b,c,d=map(int,sys.argv[1:5]); print(round((c-a)/(d-b)))' "${a[@]}" "${b[@]}")"
UNIT=request; [ "$DRIVE" = keepalive ] || UNIT=connection
echo "$SERVER ($DRIVE): $PER instructions per $UNIT ($((b[1] - a[1])) ${UNIT}s between a $SHORT s and a $LONG s run; totals ${a[0]} / ${a[1]} and ${b[0]} / ${b[1]})"
WINDOW="$(ls "$TMP"/callgrind.long.2 2>/dev/null || true)"
if [ -n "$WINDOW" ]; then
    echo
    echo "steady window ($((LONG * 3 / 10)) s to $((LONG * 3 / 10 + LONG / 2)) s of the $LONG s run), top $TOP by inclusive cost below the event loop's own frames"
    echo "(those under 99% of the window), as instructions per $UNIT:"
    DEMANGLE=(cat)
    command -v swift >/dev/null 2>&1 && DEMANGLE=(swift demangle --simplified)
    callgrind_annotate --inclusive=yes --threshold=100 "$WINDOW" 2>/dev/null | "${DEMANGLE[@]}" \
        | python3 -c '
import json, re, sys
per, top = float(sys.argv[1]), int(sys.argv[2])
total, rows = None, []
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(.*) \[", line) or re.match(r"\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(\S.*)$", line)
    if not m:
        continue
    n = int(m.group(1).replace(",", ""))
    name = m.group(2).strip()
    if "PROGRAM TOTALS" in name:
        total = n
    elif total and not name.startswith(("Ir", "-")) and n < 0.99 * total:
        rows.append((n, name))  # below the frames every request passes through (thread, loop, dispatch)
print(f"| instructions/{sys.argv[3]} | share | function |")
print("| ---: | ---: | --- |")
rows = [(n, re.sub(r"^.*?:", "", name, count=1) if name.startswith("/") or "???" in name[:4] else name)
        for n, name in rows[:top]]
for n, name in rows:
    print(f"| {n / total * per:,.0f} | {n / total * 100:.1f}% | `{name[:110]}` |")
if total:  # recorded with the count
    json.dump({"top": [{"instructions": round(n / total * per), "share": round(n / total, 4), "function": name[:110]}
                       for n, name in rows]}, open(sys.argv[4], "w"))
' "$PER" "$TOP" "$UNIT" "$TMP/top.json"
    [ -z "${KEEP:-}" ] || { mkdir -p "$KEEP"; cp "$TMP"/callgrind.* "$KEEP"/; }
fi
if [ "${RESULT_NAME:-}" != none ]; then
    python3 "$HERE/../record-result.py" "${RESULT_NAME:-instructions-tls-$DRIVE-$SERVER}" --command "$COMMAND" \
        --driver "$(case "$DRIVE" in keepalive) echo "wrk -t1 -c$CONNS" ;; close) echo "wrk -t1 -c$CONNS, Connection: close" ;;
                    resume) echo "loadtest http -c $CONNS --tls-resume, Connection: close" ;; full) echo "$CONNS openssl s_time -new" ;; esac)" \
        --load-independent --figure "server=$SERVER" --figure "drive=$DRIVE" --figure "unit=$UNIT" --figure "instructions=$PER" \
        --figure "operations=$((b[1] - a[1]))" --figure "connections=$CONNS" --figure "short_s=$SHORT" --figure "long_s=$LONG" \
        $( [ -s "$TMP/top.json" ] && echo --figures-json "$TMP/top.json") >&2
fi
