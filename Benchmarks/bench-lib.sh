# bench-lib.sh: helpers shared by compare.sh and tls-compare.sh (sourced, not run). The caller sets TMP (a
# scratch dir removed at exit) before `trap cleanup EXIT`, and the script name in BENCH_NAME for messages.
#
# Recording: a script's run is written to Benchmarks/results only with BENCH_RECORD=1 (record-result.py decides,
# for every script), so that measuring leaves a clone clean. The load averages when the script started are
# kept in BENCH_LOADAVG_START (exported, for record-result.py): the work already on the machine, before the
# run adds its own; render-docs.py does not use a wall-clock run that started above the machine's core count.
export BENCH_LOADAVG_START="${BENCH_LOADAVG_START:-$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)}"
#
# Every process a script starts goes into STARTED_PIDS and is killed by its pid at exit; servers run pinned
# to core 0 and listen on 127.0.0.1 only.

STARTED_PIDS=()
cleanup() {
    local pid
    for pid in "${STARTED_PIDS[@]:-}"; do
        [ -n "$pid" ] || continue
        kill -TERM "$pid" 2>/dev/null || true
    done
    sleep 0.3
    for pid in "${STARTED_PIDS[@]:-}"; do
        [ -n "$pid" ] || continue
        kill -KILL "$pid" 2>/dev/null || true
    done
    [ -z "${TMP:-}" ] || rm -rf "$TMP"
}
# Forget a pid once it has been waited for, so that cleanup never signals a recycled pid.
untrack() {
    local pid="$1" i
    for i in "${!STARTED_PIDS[@]}"; do
        [ "${STARTED_PIDS[$i]}" = "$pid" ] && unset 'STARTED_PIDS[i]'
    done
    return 0
}

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

NEXT_PORT=$((21000 + RANDOM % 4000))
# A port nothing listens on (below the ephemeral range, so no client socket holds it).
free_port() {
    while :; do
        NEXT_PORT=$((NEXT_PORT + 1))
        [ "$NEXT_PORT" -lt 29990 ] || NEXT_PORT=21000
        if [ -z "$(ss -Htan "sport = :$NEXT_PORT" 2>/dev/null)" ]; then
            echo "$NEXT_PORT"
            return
        fi
    done
}

# write_nginx_conf DIR PORT [CERT KEY]: one worker returning "hello" to every request on 127.0.0.1:PORT,
# keep-alive without a request cap; with CERT and KEY it serves HTTPS (TLS 1.2 and 1.3, ALPN http/1.1).
write_nginx_conf() {
    local dir="$1" port="$2" cert="${3:-}" key="${4:-}" listen ssl=""
    mkdir -p "$dir/logs" "$dir/tmp"
    listen="127.0.0.1:$port"
    if [ -n "$cert" ]; then
        listen="$listen ssl"
        ssl="ssl_certificate $cert;
        ssl_certificate_key $key;
        ssl_protocols TLSv1.2 TLSv1.3;"
    fi
    cat >"$dir/nginx.conf" <<CONF
# One worker, returning "hello" to every request on $listen, keep-alive without a request cap.
user root;
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
worker_rlimit_nofile 20000;
events {
    worker_connections 20000;
    use epoll;
}
http {
    access_log off;
    keepalive_requests 1000000000;
    keepalive_timeout 300s;
    tcp_nodelay on;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen $listen;
        $ssl
        location / {
            default_type text/plain;
            return 200 "hello";
        }
    }
}
CONF
}

SERVER_PID=""      # the process whose CPU time is measured
SERVER_MAIN_PID="" # the process we started (nginx: the master)

# launch_server NAME PORT LOG COMMAND...: starts COMMAND pinned to core 0 and waits until it listens on
# PORT. For NAME nginx* the measured process (SERVER_PID) is the master's one worker.
launch_server() {
    local name="$1" port="$2" logfile="$3"
    shift 3
    taskset -c 0 "$@" >"$logfile" 2>&1 &
    SERVER_MAIN_PID=$!
    STARTED_PIDS+=("$SERVER_MAIN_PID")
    local i
    for i in $(seq 1 100); do
        if ss -Htln "sport = :$port" 2>/dev/null | grep -q .; then break; fi
        if ! kill -0 "$SERVER_MAIN_PID" 2>/dev/null; then
            echo "$BENCH_NAME: $name exited at start:" >&2; cat "$logfile" >&2; return 1
        fi
        sleep 0.1
    done
    ss -Htln "sport = :$port" | grep -q . || { echo "$BENCH_NAME: $name does not listen on $port" >&2; return 1; }
    SERVER_PID="$SERVER_MAIN_PID"
    case "$name" in
        nginx*)
            for i in $(seq 1 50); do
                SERVER_PID="$(pgrep -P "$SERVER_MAIN_PID" | head -1 || true)"
                [ -n "$SERVER_PID" ] && break
                sleep 0.1
            done
            [ -n "$SERVER_PID" ] || { echo "$BENCH_NAME: no nginx worker" >&2; return 1; }
            STARTED_PIDS+=("$SERVER_PID") ;;
    esac
    sleep 0.3
}

stop_server() {
    local pid="$SERVER_MAIN_PID" i
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    [ "$SERVER_PID" = "$pid" ] || kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    untrack "$pid"
    untrack "$SERVER_PID"
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
fd_count() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
# utime+stime of a process in clock ticks (getconf CLK_TCK per second), all its threads included.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# Time on a CPU in nanoseconds of a process, all its threads summed (/proc/PID/task/*/schedstat: exact where
# cpu_ticks counts 10 ms ticks, for windows in which a process runs for only a few hundred milliseconds).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ n += $1 } END { printf "%.0f\n", n }'; }

# loadtest_and_server PRODUCT [LOADTEST [SERVER]]: the usage of the scripts that drive one example server with
# loadtest. Sets LOADTEST and SERVER to the binaries given, building the release ones that are not.
loadtest_and_server() {
    local product=$1; shift
    if [ $# -eq 0 ]; then swift build -c release --product loadtest >/dev/null; fi
    if [ $# -le 1 ]; then swift build -c release --product "$product" >/dev/null; fi
    LOADTEST=$(realpath "${1:-.build/release/loadtest}"); SERVER=$(realpath "${2:-.build/release/$product}")
}
