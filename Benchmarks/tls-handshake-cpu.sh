#!/usr/bin/env bash
# tls-handshake-cpu.sh: server user and system CPU per full TLS handshake (one HTTP/1.0 request each), our
# http-hello beside nginx and swift-nio-ssl, the servers alternated round after round.
#
#     Benchmarks/tls-handshake-cpu.sh                      # 4 rounds of 6 s, ours nginx nio
#     ROUNDS=3 SECONDS_PER_RUN=10 SERVERS="ours nginx" Benchmarks/tls-handshake-cpu.sh
#
# Each run: the server pinned to core 0, 16 `openssl s_time -new -www /` clients on core 1 for SECONDS_PER_RUN,
# utime and stime of the server from /proc/PID/stat before and after, divided by the connections the clients
# completed. Prints one line per run and the medians, and, with BENCH_RECORD=1, records them (every round too) as
# Benchmarks/results/tls-handshake-cpu.json (record-result.py; RESULT_NAME for another name, RESULT_NAME=none
# for none), which docs/benchmarks.md's TLS table is rendered from. A throw-away ECDSA P-256 certificate;
# everything on 127.0.0.1. Binaries: ROOT_BUILD (../.build-compare) and BENCH_BUILD (.build-peers), release, as tls-compare.sh
# builds them. Needs nginx and openssl; noisy on a shared machine: compare ratios.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
COMMAND="$(for v in ROUNDS SECONDS_PER_RUN SERVERS; do
    case "${!v:-}" in "") ;; *" "*) printf '%s="%s" ' "$v" "${!v}" ;; *) printf '%s=%s ' "$v" "${!v}" ;; esac
done)Benchmarks/tls-handshake-cpu.sh"
STARTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
ROOT_BUILD="${ROOT_BUILD:-$HERE/../.build-compare}"
BENCH_BUILD="${BENCH_BUILD:-$HERE/.build-peers}"
ROUNDS="${ROUNDS:-4}"
SECONDS_PER_RUN="${SECONDS_PER_RUN:-6}"
SERVERS="${SERVERS:-ours nginx nio}"
PORT="${PORT:-19700}"
TMP="$(mktemp -d /tmp/tls-handshake-cpu.XXXXXX)"
SERVER=""
trap '[ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null || true; rm -rf "$TMP"' EXIT
BENCH_NAME=tls-handshake-cpu.sh source "$HERE/bench-lib.sh"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -keyout "$TMP/key.pem" -out "$TMP/cert.pem" >/dev/null 2>&1
HZ="$(getconf CLK_TCK)"

run() { # server -> "user_us sys_us connections"
    local name="$1" i ticks0 ticks1 conns
    case "$name" in
        ours) taskset -c 0 "$ROOT_BUILD/release/http-hello" --port "$PORT" --host 127.0.0.1 --loops 1 \
                  --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem" >"$TMP/server.log" 2>&1 & ;;
        nio) taskset -c 0 "$BENCH_BUILD/release/nio-https-server" --port "$PORT" --host 127.0.0.1 --loops 1 \
                 --cert "$TMP/cert.pem" --key "$TMP/key.pem" >"$TMP/server.log" 2>&1 & ;;
        nginx)
            write_nginx_conf "$TMP/nginx" "$PORT" "$TMP/cert.pem" "$TMP/key.pem"
            sed -i 's/^daemon off;/daemon off;\nmaster_process off;/' "$TMP/nginx/nginx.conf"
            taskset -c 0 nginx -e "$TMP/nginx/logs/error.log" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" \
                >"$TMP/server.log" 2>&1 & ;;
        *) echo "unknown server $name" >&2; exit 2 ;;
    esac
    SERVER=$!
    for i in $(seq 100); do ss -Htln "sport = :$PORT" | grep -q . && break; sleep 0.1; done
    ticks0="$(awk '{ print $14, $15 }' "/proc/$SERVER/stat")"
    rm -f "$TMP"/s_time.*
    local -a clients=()
    for i in $(seq 16); do
        taskset -c 1 timeout $((SECONDS_PER_RUN + 30)) openssl s_time -connect "127.0.0.1:$PORT" -new -www / \
            -time "$SECONDS_PER_RUN" >"$TMP/s_time.$i" 2>&1 &
        clients+=($!)
    done
    wait "${clients[@]}" || true
    ticks1="$(awk '{ print $14, $15 }' "/proc/$SERVER/stat")"
    conns="$(cat "$TMP"/s_time.* | awk '/connections in .* real seconds/ { n += $1 } END { print n + 0 }')"
    kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
    PORT=$((PORT + 1))
    python3 -c 'import sys; u0, s0, u1, s1, n, hz = map(float, sys.argv[1:]); print(f"{(u1 - u0) / hz * 1e6 / n:.1f} {(s1 - s0) / hz * 1e6 / n:.1f} {n:.0f}")' \
        $ticks0 $ticks1 "$conns" "$HZ"
}

: >"$TMP/results"
for round in $(seq "$ROUNDS"); do
    for name in $SERVERS; do
        read -r user sys conns < <(run "$name")
        echo "round $round $name: $conns connections, user $user µs, system $sys µs per connection"
        echo "$name $user $sys $conns" >>"$TMP/results"
    done
done
NGINX_VERSION="$(nginx -v 2>&1 | grep -o 'nginx/[0-9.]*' || true)"
python3 - "$TMP/results" "$HERE/record-result.py" "${RESULT_NAME:-tls-handshake-cpu}" "$COMMAND" "$STARTED" \
    "$ROUNDS" "$SECONDS_PER_RUN" "$NGINX_VERSION" $SERVERS <<'PY'
import importlib.util, statistics, sys
results, recorder_file, name, command, started, rounds, seconds, nginx = sys.argv[1:9]
rows = [line.split() for line in open(results)]
medians, servers = {}, {}
for server in sys.argv[9:]:
    mine = [(float(u), float(s), int(c)) for n, u, s, c in rows if n == server]
    medians[server] = statistics.median(u + s for u, s, _ in mine)
    user, system = statistics.median(u for u, _, _ in mine), statistics.median(s for _, s, _ in mine)
    print(f"{server}: median {medians[server]:.1f} µs per connection (user {user:.1f}, system {system:.1f})")
    servers[server] = {"cost": medians[server], "user": user, "system": system, "unit": "µs/conn",
                       "rounds": [round(u + s, 1) for u, s, _ in mine], "connections": [c for _, _, c in mine]}
if "ours" in medians:
    for server, value in medians.items():
        if server != "ours":
            print(f"ours / {server}: {medians['ours'] / value:.2f}")
if name != "none":
    spec = importlib.util.spec_from_file_location("record_result", recorder_file)
    recorder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorder)
    figures = {"rounds": int(rounds), "seconds": float(seconds), "clients": 16, "nginx": nginx or None,
               "servers": servers}
    print("recorded", recorder.record(name, command, figures, driver="16 openssl s_time -new clients",
                                      started=started))
PY
