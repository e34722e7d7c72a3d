#!/usr/bin/env bash
# tls-idle-memory.sh: bytes per idle TLS connection, server side and client side, beside nginx with the same
# certificate, with OpenSSL's SSL_MODE_RELEASE_BUFFERS as set (released) and cleared (kept).
#
#     Benchmarks/tls-idle-memory.sh                          # 10,000 connections, every server, both variants
#     Benchmarks/tls-idle-memory.sh --connections 2000 --servers nginx --variants released
#
# Server side: `echo-server` and `http-hello` (--tls-cert/--tls-key, one loop) and nginx (from Debian: one
# worker, the master and worker run as the invoking user in the foreground, on a 127.0.0.1 port, from a config
# file written here; `ssl_session_cache` left at its default, `none`: nothing stored per session, tickets
# issued). For each server: a warm-up of 50 connections opened and closed (what a server sets up at its first
# connections is not counted), the worker's VmRSS read, then `loadtest idle --tls --insecure --loops 1`
# opens N connections, each past its handshake (and the TLS 1.3 tickets the server sends after it read), and
# holds them; once loadtest says they are open, the server's VmRSS is read again and the growth divided by
# the connections established on the server's port at that moment (`ss`: a server that closed some does not
# inflate the figure).
#
# Client side: loadtest's own VmRSS while it holds the N connections (against nginx), less its VmRSS while it
# holds one connection, divided by N - 1.
#
# Variants: "released" runs everything as built (our contexts set SSL_MODE_RELEASE_BUFFERS, and so does nginx);
# "kept" preloads a small shim (LD_PRELOAD, built here) that clears SSL_MODE_RELEASE_BUFFERS from every
# SSL_CTX_set_mode/SSL_set_mode call and turns SSL_free_buffers into a no-op, in the servers and in loadtest:
# OpenSSL then keeps each connection's read and write buffers (about 17 KB each) while it idles. The shim
# can also be built alone (--shim FILE), to count with Benchmarks/profile/tls-instructions-per-request.sh what
# releasing the buffers costs per request: LD_PRELOAD=FILE Benchmarks/profile/tls-instructions-per-request.sh ours
#
# Options:
#   --connections N   connections held (default 10000)
#   --servers LIST    comma-separated, of: echo http-hello nginx (default all)
#   --variants LIST   comma-separated, of: released kept (default both)
#   --no-build        use the binaries already built (ROOT_BUILD, default .build-compare, release)
#   --record NAME     with BENCH_RECORD=1, record as Benchmarks/results/NAME.json (default tls-idle-memory)
#   --shim FILE       only build the "kept" variant's shim, as FILE, and exit
#
# RSS growth is memory, not time: the machine's load changes it little, so the run is recorded as
# load-independent (the load averages at its start and end are recorded and printed all the same). Needs
# nginx, openssl, cc, ss. Everything listens on 127.0.0.1; every process started here is killed at exit.
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT_DIR="$(cd "$BENCH_DIR/.." && pwd)"
ROOT_BUILD="${ROOT_BUILD:-$ROOT_DIR/.build-compare}"
CONNECTIONS=10000
SERVERS="echo http-hello nginx"
VARIANTS="released kept"
BUILD=1
RECORD=tls-idle-memory
SHIM_ONLY=""
COMMAND="Benchmarks/tls-idle-memory.sh${*:+ $*}"

while [ $# -gt 0 ]; do
    case "$1" in
        --connections) CONNECTIONS="$2"; shift ;;
        --servers) SERVERS="${2//,/ }"; shift ;;
        --variants) VARIANTS="${2//,/ }"; shift ;;
        --no-build) BUILD=0 ;;
        --record) RECORD="$2"; shift ;;
        --shim) SHIM_ONLY="$2"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "tls-idle-memory.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

# The "kept" variant's shim: SSL_CTX_set_mode and SSL_set_mode are macros over SSL_CTX_ctrl and SSL_ctrl, which
# the servers and loadtest call in the shared libssl; this one strips SSL_MODE_RELEASE_BUFFERS and passes on,
# and makes SSL_free_buffers (which our engine calls once a read's input is decrypted) free nothing.
build_shim() { # FILE
    local source="${1%.so}.c"
    cat >"$source" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <openssl/ssl.h>
long SSL_CTX_ctrl(SSL_CTX *ctx, int cmd, long larg, void *parg) {
    static long (*real)(SSL_CTX *, int, long, void *);
    if (!real) real = (long (*)(SSL_CTX *, int, long, void *))dlsym(RTLD_NEXT, "SSL_CTX_ctrl");
    if (cmd == SSL_CTRL_MODE) larg &= ~(long)SSL_MODE_RELEASE_BUFFERS;
    return real(ctx, cmd, larg, parg);
}
/* Our engine frees what OpenSSL still holds once a read's input is decrypted: not in this variant. */
int SSL_free_buffers(SSL *ssl) { (void)ssl; return 0; }
long SSL_ctrl(SSL *ssl, int cmd, long larg, void *parg) {
    static long (*real)(SSL *, int, long, void *);
    if (!real) real = (long (*)(SSL *, int, long, void *))dlsym(RTLD_NEXT, "SSL_ctrl");
    if (cmd == SSL_CTRL_MODE) larg &= ~(long)SSL_MODE_RELEASE_BUFFERS;
    return real(ssl, cmd, larg, parg);
}
C
    cc -O2 -shared -fPIC -o "$1" "$source" -ldl
}
if [ -n "$SHIM_ONLY" ]; then
    build_shim "$SHIM_ONLY"
    exit 0
fi

for tool in nginx openssl cc ss python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "tls-idle-memory.sh: needs $tool (apt-get install nginx-light openssl gcc)" >&2; exit 1; }
done
NGINX="$(command -v nginx)"
TMP="$(mktemp -d /tmp/tls-idle-memory.XXXXXX)"
BENCH_NAME=tls-idle-memory.sh
# shellcheck source=bench-lib.sh
source "$BENCH_DIR/bench-lib.sh"
trap cleanup EXIT
trap 'echo "tls-idle-memory.sh: interrupted" >&2; exit 130' INT TERM
STARTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
OUT="${OUT:-/tmp/tls-idle-memory-$(date -u +%Y%m%d-%H%M%S)}"  # the servers' and loadtest's logs are kept here
mkdir -p "$OUT"

BIN="$ROOT_BUILD/release"
if [ "$BUILD" = 1 ]; then
    for product in echo-server http-hello loadtest; do
        log "building $product (release)"
        (cd "$ROOT_DIR" && swift build -c release --scratch-path "$ROOT_BUILD" --product "$product" >"$TMP/build.log" 2>&1) \
            || { tail -30 "$TMP/build.log" >&2; exit 1; }
    done
fi
for bin in echo-server http-hello loadtest; do
    [ -x "$BIN/$bin" ] || { echo "tls-idle-memory.sh: missing $BIN/$bin (run without --no-build)" >&2; exit 1; }
done

# Each process holds one descriptor per connection (server and client are separate processes).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((CONNECTIONS + 200)) ]; then
    echo "tls-idle-memory.sh: the descriptor limit $(ulimit -n) is too low for $CONNECTIONS connections" >&2
    exit 1
fi

CERT="$TMP/cert.pem"
KEY="$TMP/key.pem"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$KEY" -out "$CERT" >/dev/null 2>&1


build_shim "$TMP/keep-buffers.so"
preload_of() { [ "$1" = kept ] && echo "$TMP/keep-buffers.so" || true; }

write_conf() { # dir port
    mkdir -p "$1/logs" "$1/tmp"
    cat >"$1/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $1/nginx.pid;
error_log $1/logs/error.log info;
events {
    # Room to spare: short of free slots, nginx closes idle connections to reuse theirs.
    worker_connections $((CONNECTIONS + CONNECTIONS / 4 + 1000));
    use epoll;
}
http {
    access_log off;
    # Connections sit idle, without a request, until every one of them is open.
    client_header_timeout 600s;
    keepalive_timeout 600s;
    client_body_temp_path $1/tmp/body;
    proxy_temp_path $1/tmp/proxy;
    fastcgi_temp_path $1/tmp/fastcgi;
    uwsgi_temp_path $1/tmp/uwsgi;
    scgi_temp_path $1/tmp/scgi;
    server {
        listen 127.0.0.1:$2 ssl;
        ssl_certificate $CERT;
        ssl_certificate_key $KEY;
        ssl_protocols TLSv1.2 TLSv1.3;
        location / {
            default_type text/plain;
            return 200 "hello";
        }
    }
}
CONF
}

start() { # server variant port
    local server="$1" preload dir
    preload="$(preload_of "$2")"
    local -a cmd
    case "$server" in
        echo) cmd=("$BIN/echo-server" --port "$3" --host 127.0.0.1 --loops 1 --tls-cert "$CERT" --tls-key "$KEY") ;;
        http-hello) cmd=("$BIN/http-hello" --port "$3" --host 127.0.0.1 --loops 1 --tls-cert "$CERT" --tls-key "$KEY") ;;
        nginx)
            dir="$TMP/nginx-$3"
            write_conf "$dir" "$3"
            cmd=("$NGINX" -e "$dir/logs/error.log" -p "$dir" -c "$dir/nginx.conf")
            # Unprivileged: as root, nginx runs as nobody (its files made readable and its directory writable).
            if [ "$(id -u)" = 0 ]; then
                chmod 755 "$TMP"; chmod 644 "$CERT" "$KEY"; chown -R nobody "$dir"
                cmd=(setpriv --reuid=nobody --regid=nogroup --clear-groups "${cmd[@]}")
            fi ;;
    esac
    launch_server "$server" "$3" "$TMP/$server-$2.log" env ${preload:+LD_PRELOAD="$preload"} "${cmd[@]}"
}

# hold VARIANT PORT N OUT: runs loadtest holding N idle TLS connections (in the background, LOADTEST_PID) and
# returns once it reports them open (its --timeout bounds how long it waits for them: handshakes on a loaded
# machine can outlast the default).
hold() {
    local preload
    preload="$(preload_of "$1")"
    env ${preload:+LD_PRELOAD="$preload"} "$BIN/loadtest" idle --host 127.0.0.1 --port "$2" -c "$3" --tls --insecure \
        --loops 1 -d 600 --timeout 120 >"$4" 2>&1 &
    LOADTEST_PID=$!
    STARTED_PIDS+=("$LOADTEST_PID")
    local i
    for i in $(seq 1 3000); do
        grep -qs "connections open in" "$4" && break
        kill -0 "$LOADTEST_PID" 2>/dev/null || { echo "tls-idle-memory.sh: loadtest exited:" >&2; cat "$4" >&2; return 1; }
        sleep 0.1
    done
    grep -qs "connections open in" "$4" || { echo "tls-idle-memory.sh: connections not open in 300 s" >&2; return 1; }
    sleep 1  # the last handshakes' tickets reach the clients, which read them
}

release() {
    kill -INT "$LOADTEST_PID" 2>/dev/null || true
    wait "$LOADTEST_PID" 2>/dev/null || true
    untrack "$LOADTEST_PID"
}

# The connections loadtest reports open in OUT ("  1936 of 2000 connections open in 3.10 s (64 failed)").
opened() { sed -n 's/^ *\([0-9]*\) of [0-9]* connections open in.*/\1/p' "$1" | head -1; }

established() { ss -Htn state established "sport = :$1" | wc -l; }

RESULTS="$TMP/results.jsonl"
: >"$RESULTS"
add() { echo "$*" >>"$RESULTS"; }

log "load average at the start: $BENCH_LOADAVG_START ($(nproc) cores); $CONNECTIONS connections"
for variant in $VARIANTS; do
    for server in $SERVERS; do
        port="$(free_port)"
        start "$server" "$variant" "$port"
        hold "$variant" "$port" 50 "$TMP/warm.log"
        release
        for _ in $(seq 1 50); do [ "$(established "$port")" = 0 ] && break; sleep 0.1; done
        before="$(rss_kib "$SERVER_PID")"
        hold "$variant" "$port" "$CONNECTIONS" "$TMP/$server-$variant-loadtest.log"
        held="$(established "$port")"
        open="$(opened "$TMP/$server-$variant-loadtest.log")"
        after="$(rss_kib "$SERVER_PID")"
        client="$(rss_kib "$LOADTEST_PID")"
        release
        if [ "$server" = nginx ]; then
            hold "$variant" "$port" 1 "$TMP/one.log"
            one="$(rss_kib "$LOADTEST_PID")"
            release
            add "{\"side\": \"client\", \"variant\": \"$variant\", \"rss_one_kib\": $one, \"rss_held_kib\": $client, \"connections\": $CONNECTIONS}"
            log "$variant client (loadtest): $(( (client - one) * 1024 / (CONNECTIONS - 1) )) B per connection"
        fi
        stop_server
        add "{\"side\": \"server\", \"server\": \"$server\", \"variant\": \"$variant\", \"rss_before_kib\": $before, \"rss_held_kib\": $after, \"held\": $held, \"opened\": ${open:-0}}"
        log "$variant $server: $(( (after - before) * 1024 / (held > 0 ? held : 1) )) B per connection ($held established, loadtest: ${open:-?} open)"
        cp "$TMP/$server-$variant-loadtest.log" "$TMP/$server-$variant.log" "$OUT/" 2>/dev/null || true
        [ "$server" != nginx ] || cp "$TMP/nginx-$port/logs/error.log" "$OUT/nginx-$variant-error.log" 2>/dev/null || true
    done
done

python3 - "$RESULTS" "$CONNECTIONS" "$("$NGINX" -v 2>&1 | sed 's/.*nginx\///')" >"$TMP/figures.json" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
figures = {"connections": int(sys.argv[2]), "nginx": sys.argv[3], "servers": {}, "client": {}}
for r in rows:
    if r["side"] == "server":
        per = round((r["rss_held_kib"] - r["rss_before_kib"]) * 1024 / max(1, r["held"]))
        figures["servers"].setdefault(r["server"], {})[r["variant"]] = dict(
            bytes=per, held=r["held"], opened=r["opened"], rss_before_kib=r["rss_before_kib"], rss_held_kib=r["rss_held_kib"])
    else:
        per = round((r["rss_held_kib"] - r["rss_one_kib"]) * 1024 / max(1, r["connections"] - 1))
        figures["client"][r["variant"]] = dict(bytes=per, rss_one_kib=r["rss_one_kib"], rss_held_kib=r["rss_held_kib"])
print(json.dumps(figures, indent=2))
PY
cat "$TMP/figures.json"
log "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$BENCH_DIR/record-result.py" "$RECORD" --command "$COMMAND" --started "$STARTED" --load-independent \
    --driver "loadtest idle --tls --loops 1" --figures-json "$TMP/figures.json"
