#!/usr/bin/env python3
"""The soak: every example server under a mixed load for a long time, checked for growth and leaks.

    Benchmarks/soak.sh                      (builds, then runs this; SOAK_MINUTES, SOAK_OUT)
    Benchmarks/soak.py --minutes 30 --out DIR --bin .build/release --c-bin Benchmarks/c-reference

One process of each server runs for the whole time, with its loops' metrics served (`--metrics`):
echo-server, async-echo-server, http-hello over TLS (a throwaway certificate made here) and udp-echo-server.
Time is cut into cycles of --cycle seconds (default 60): load for all but the last --pause seconds (default 15),
then nothing. Each load phase runs, at once and each to its end:

- steady echo: the C `loadgen pingpong` (50 connections, 64 B) at echo-server, `loadtest echo` (50, 1 KiB) at
  async-echo-server;
- churn: `loadgen churn` (4 parallel, reset closes) at one echo server, `loadtest connect` (4) at the other,
  swapping each cycle;
- TLS: `loadtest http` over https with `Connection: close` (a full handshake per request, 4 connections) and
  keep-alive (16 connections) at http-hello;
- UDP: the C `udpgen` (20 flows, 256 B) at udp-echo-server;
- idle connections that come and go: `loadgen idle` (1,000 connections held 20 s) at one echo server, and
  `loadtest idle --tls` (200 held 10 s: http-hello closes a connection silent for 30 s) at http-hello;
- hostile clients (`Hostile` below): an unread sender, resets mid-stream, slowloris, oversized headers, a TCP
  flood, a datagram flood. Until RSS starts being compared (the warm-up: minute 5, or the first third of a
  shorter run) every kind runs in every cycle; from then on two a cycle in rotation, so that each kind runs every
  three minutes. The warm-up is there because a kind's first few runs raise a server's RSS a step each (about
  200 KiB for http-hello's TLS kinds), and later runs do not: the allocator settles around the shapes that kind
  leaves, and the comparison must start after that.

Every 10 s it records each server's RSS (/proc), open descriptors (/proc/PID/fd, read before the metrics page is
asked for), loop utilisation and lag (the metrics page's `epoll_loop_busy_seconds_total`,
`epoll_loop_wait_seconds_total` and `epoll_loop_lag_seconds` over the 10 s), and the errors the load counted so
far, to DIR/soak.csv, and at the end draws DIR/soak.svg. Errors come from the generators' own counts (the C
tools' `RESULT ... errors=N`, loadtest's JSON `errors.total`); what the hostile clients suffer is expected and
not counted, but each must see what it was built to see (a close, a 431, the server still answering).

It passes when:
1. from minute 5 (or the end of the first third, for a run shorter than 15 minutes) on, each server's RSS at
   the end of each pause grows less than 1% (the median of the last three such samples against the median of
   the first three: a single 10 s sample moves by a few hundred KiB with what the last cycle freed);
2. at the end of every pause each server's descriptors are back to the count it had at the end of the first
   pause (waited for within the pause), which is at most one per loop above its count before any load (each
   loop opens a reserve descriptor, for accept at EMFILE, when its first connection arrives);
3. no load generator counted an error, exited abnormally, or found its server gone; no hostile check failed;
4. each server exits 0 on SIGTERM within 15 s.
The verdict and the figures go to DIR/summary.txt and standard output; the exit status is 0 on a pass, 1 on a
failure, 2 when the soak could not start. Only loopback; every wait is bounded.
"""
import argparse
import atexit
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

SAMPLE_SECONDS = 10
RSS_MEDIAN_OF = 3  # pause-end samples whose median stands for each end of the compared span
# Loops per server: each opens one descriptor of its own when its first connection arrives (the reserve kept
# for accept at EMFILE), so a server's count after the first load phase may exceed its count before any load
# by up to this many; after that it must not move.
LOOPS = 2
STARTED = []


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)


@atexit.register
def _kill_started():
    """However the soak ends, no server outlives it."""
    for process in STARTED:
        if process.poll() is None:
            process.kill()


def log(message):
    print(time.strftime("%H:%M:%S ", time.gmtime()) + message, flush=True)


# --- Servers -----------------------------------------------------------------------------------------------

class Server:
    """One example server process: its ports (from its announcement lines) and its /proc figures."""

    def __init__(self, name, command, logdir):
        self.name = name
        self.log = open(os.path.join(logdir, name + ".log"), "w")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.log, text=True)
        STARTED.append(self.process)
        self.port = None
        self.metrics_port = None
        self.lines = []
        deadline = time.monotonic() + 30
        while (self.port is None or self.metrics_port is None) and time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.log.write(line)
            self.log.flush()
            if m := re.search(r"(?:listening on|bound to) \S+ port (\d+)", line):
                self.port = int(m.group(1))
            if m := re.search(r"metrics on http://[^:]+:(\d+)/metrics", line):
                self.metrics_port = int(m.group(1))
        if self.port is None or self.metrics_port is None:
            raise SystemExit(f"soak: {name} did not announce its ports: {command}")
        # Whatever it prints later goes to its log.
        threading.Thread(target=self._copy_output, daemon=True).start()

    def _copy_output(self):
        for line in self.process.stdout:
            self.log.write(line)
            self.log.flush()

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process.poll() is None

    def rss_kib(self):
        try:
            with open(f"/proc/{self.pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def descriptors(self):
        try:
            return len(os.listdir(f"/proc/{self.pid}/fd"))
        except OSError:
            return -1

    def metrics(self):
        """The metrics page's totals: busy and wait seconds, lag buckets (le -> count), lag sum and count."""
        page = http_get("127.0.0.1", self.metrics_port, "/metrics")
        figures = {"busy": 0.0, "wait": 0.0, "lag_sum": 0.0, "lag_count": 0.0, "buckets": {}}
        for line in page.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name, _, value = line.rpartition(" ")
            value = float(value)
            if name.startswith("epoll_loop_busy_seconds_total"):
                figures["busy"] += value
            elif name.startswith("epoll_loop_wait_seconds_total"):
                figures["wait"] += value
            elif name.startswith("epoll_loop_lag_seconds_sum"):
                figures["lag_sum"] += value
            elif name.startswith("epoll_loop_lag_seconds_count"):
                figures["lag_count"] += value
            elif name.startswith("epoll_loop_lag_seconds_bucket"):
                bound = re.search(r'le="([^"]+)"', name).group(1)
                bound = float("inf") if bound == "+Inf" else float(bound)
                figures["buckets"][bound] = figures["buckets"].get(bound, 0.0) + value
        return figures

    def terminate(self, timeout=15):
        """SIGTERM, then its exit status (None: still running after `timeout` s, then killed)."""
        if not self.alive():
            return self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
            return None


def tls_context():
    """A client context that takes the soak's throwaway certificate."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def http_get(host, port, path, timeout=5):
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).partition(b"\r\n\r\n")[2].decode(errors="replace")


# --- Load --------------------------------------------------------------------------------------------------

class Load:
    """The load generators of one phase, each a process; their errors counted when they end."""

    def __init__(self, logdir):
        self.logdir = logdir
        self.errors = 0
        self.failures = []
        self.runs = 0
        self.lock = threading.Lock()

    def run(self, name, command, json_file=None):
        """Starts a generator; the returned thread waits for it (bounded) and counts its errors."""
        def body():
            path = os.path.join(self.logdir, name + ".log")
            with open(path, "a") as out:
                out.write("$ " + " ".join(command) + "\n")
                out.flush()
                try:
                    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=out, text=True, timeout=120)
                    out.write(done.stdout)
                    status, output = done.returncode, done.stdout
                except subprocess.TimeoutExpired as e:
                    status, output = "timeout", e.stdout or ""
            errors = 0
            for m in re.finditer(r"errors=(\d+)", output if isinstance(output, str) else ""):
                errors = max(errors, int(m.group(1)))
            if json_file and os.path.exists(json_file):
                with open(json_file) as f:
                    errors = max(errors, int(json.load(f)["errors"]["total"]))
                os.remove(json_file)
            with self.lock:
                self.runs += 1
                self.errors += errors
                if status != 0 or errors:
                    self.failures.append(f"{name}: exit {status}, {errors} error(s) (see {path})")
        thread = threading.Thread(target=body)
        thread.start()
        return thread


class Hostile:
    """Clients that misbehave, one per load phase in rotation, each checking what the server must do."""

    def __init__(self, echo_port, async_port, http_port, udp_port, seconds):
        self.echo_port, self.async_port, self.http_port, self.udp_port = echo_port, async_port, http_port, udp_port
        self.seconds = seconds
        self.failures = []
        self.kinds = [self.unread_sender, self.resets, self.slowloris, self.oversized_headers, self.tcp_flood,
                      self.datagram_flood]

    def fire(self, cycle, kind_index):
        kind = self.kinds[kind_index % len(self.kinds)]

        def body():
            try:
                kind()
            except Exception as error:  # a check that could not be made is a failure, not a crash of the soak
                self.failures.append(f"cycle {cycle} {kind.__name__}: {error!r}")
        thread = threading.Thread(target=body, name=kind.__name__)
        thread.start()
        return thread

    def unread_sender(self):
        """Sends into the async echo server for the phase and never reads: the server must stop reading
        (its memory bounded), and still close the connection when the client goes."""
        s = socket.create_connection(("127.0.0.1", self.async_port), timeout=5)
        s.setblocking(False)
        block = b"u" * 65536
        deadline = time.monotonic() + self.seconds
        while time.monotonic() < deadline:
            try:
                s.send(block)
            except BlockingIOError:
                time.sleep(0.05)
        s.close()

    def resets(self):
        """Connections to the echo server that send half a message and reset (SO_LINGER 0)."""
        for _ in range(200):
            s = socket.create_connection(("127.0.0.1", self.echo_port), timeout=5)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.sendall(b"r" * 4096)
            s.close()

    def slowloris(self):
        """20 connections to http-hello that finish the TLS handshake, then trickle a request head a byte a
        second: each must end by the server's timeout or by the client, never be held past the phase."""
        held = []
        for _ in range(20):
            raw = socket.create_connection(("127.0.0.1", self.http_port), timeout=10)
            held.append(tls_context().wrap_socket(raw, server_hostname="localhost"))
        head = b"GET / HTTP/1.1\r\nHost: x\r\n"
        deadline = time.monotonic() + self.seconds
        i = 0
        while time.monotonic() < deadline and held:
            for s in list(held):
                try:
                    s.send(head[i % len(head):i % len(head) + 1])
                except OSError:
                    held.remove(s)
            i += 1
            time.sleep(1)
        for s in held:
            s.close()

    def oversized_headers(self):
        """Request heads of 64 KiB over TLS: each answered 431 (http-hello takes heads up to 8 KiB)."""
        context = tls_context()
        for _ in range(20):
            with socket.create_connection(("127.0.0.1", self.http_port), timeout=10) as raw:
                with context.wrap_socket(raw, server_hostname="localhost") as s:
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"h" * 65536 + b"\r\n\r\n")
                    reply = b""
                    while b"\r\n" not in reply:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        reply += chunk
                    if not reply.startswith(b"HTTP/1.1 431"):
                        raise AssertionError(f"expected 431, got {reply[:40]!r}")

    def tcp_flood(self):
        """Sends to echo-server as fast as it can and reads everything back, for the phase."""
        s = socket.create_connection(("127.0.0.1", self.echo_port), timeout=5)
        s.setblocking(False)
        block = b"f" * 65536
        sent = received = 0
        deadline = time.monotonic() + self.seconds
        while time.monotonic() < deadline:
            try:
                sent += s.send(block)
            except BlockingIOError:
                pass
            try:
                while True:
                    chunk = s.recv(1 << 20)
                    if not chunk:
                        raise AssertionError("echo-server closed the flooding connection")
                    received += len(chunk)
            except BlockingIOError:
                time.sleep(0.001)
        s.setblocking(True)
        s.settimeout(10)
        while received < sent:
            chunk = s.recv(1 << 20)
            if not chunk:
                raise AssertionError(f"{sent - received} flooded bytes never came back")
            received += len(chunk)
        s.close()

    def datagram_flood(self):
        """Floods udp-echo-server with datagrams from eight sockets that never read their echoes (eight source
        ports, so that every loop's socket gets its share)."""
        sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(8)]
        for s in sockets:
            s.setblocking(False)
        deadline = time.monotonic() + self.seconds
        payload = b"d" * 1200
        while time.monotonic() < deadline:
            for s in sockets:
                for _ in range(125):
                    try:
                        s.sendto(payload, ("127.0.0.1", self.udp_port))
                    except BlockingIOError:
                        break
            time.sleep(0.01)
        for s in sockets:
            s.close()


# --- Sampling ----------------------------------------------------------------------------------------------

def lag_quantile(before, after, q):
    """The q-quantile of the lag samples taken between two metrics pages (the bucket's bound, seconds)."""
    bounds = sorted(after["buckets"])
    total = after["lag_count"] - before["lag_count"]
    if total <= 0:
        return 0.0
    for bound in bounds:
        if after["buckets"][bound] - before["buckets"].get(bound, 0.0) >= q * total:
            return bound
    return bounds[-1]


class Recorder:
    """Samples every server every SAMPLE_SECONDS into the CSV."""

    FIELDS = ["t_s", "phase", "server", "rss_kib", "fds", "utilisation", "lag_p99_ms", "lag_mean_ms", "load_errors"]

    def __init__(self, servers, load, path):
        self.servers = servers
        self.load = load
        self.file = open(path, "w")
        self.file.write(",".join(self.FIELDS) + "\n")
        self.rows = []
        self.previous = {s.name: s.metrics() for s in servers}
        self.start = time.monotonic()
        self.phase = "start"

    def sample(self):
        t = round(time.monotonic() - self.start, 1)
        for server in self.servers:
            fds = server.descriptors()  # before the metrics connection opens
            rss = server.rss_kib()
            try:
                now = server.metrics()
            except OSError:
                now = None
            before = self.previous[server.name]
            utilisation = lag_p99 = lag_mean = float("nan")
            if now:
                busy, wait = now["busy"] - before["busy"], now["wait"] - before["wait"]
                utilisation = busy / (busy + wait) if busy + wait > 0 else 0.0
                count = now["lag_count"] - before["lag_count"]
                lag_mean = (now["lag_sum"] - before["lag_sum"]) / count * 1000 if count > 0 else 0.0
                lag_p99 = lag_quantile(before, now, 0.99) * 1000
                self.previous[server.name] = now
            row = {"t_s": t, "phase": self.phase, "server": server.name, "rss_kib": rss, "fds": fds,
                   "utilisation": round(utilisation, 4), "lag_p99_ms": round(lag_p99, 3),
                   "lag_mean_ms": round(lag_mean, 3), "load_errors": self.load.errors}
            self.rows.append(row)
            self.file.write(",".join(str(row[f]) for f in self.FIELDS) + "\n")
        self.file.flush()


# --- The chart ---------------------------------------------------------------------------------------------

COLOURS = {"echo-server": "#1f77b4", "async-echo-server": "#ff7f0e", "http-hello-tls": "#2ca02c",
           "udp-echo-server": "#d62728"}


def chart(figures, path=None):
    """Four panels against time, from the run's samples: RSS (MiB), open descriptors, loop utilisation (%),
    lag p99 (ms). Returns the SVG text; writes it to `path` when given."""
    panels = [("RSS, MiB", lambda p: p[1] / 1024), ("open descriptors", lambda p: p[2]),
              ("loop utilisation, %", lambda p: p[3] * 100), ("loop lag p99 over 10 s, ms", lambda p: p[4])]
    minutes, series = figures["minutes"], figures["samples"]
    width, panel_h, left, top = 900, 170, 70, 30
    plot_w = width - left - 160
    height = top + len(panels) * (panel_h + 40) + 30
    t_max = max([minutes * 60] + [p[0] for points in series.values() for p in points])
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           f'font-size="11"><rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13">Soak: {minutes:g} min, a sample every '
           f'{figures["sample_seconds"]} s</text>']
    for i, (title, value) in enumerate(panels):
        y0 = top + i * (panel_h + 40) + 20
        values = [value(p) for points in series.values() for p in points if value(p) == value(p)]
        v_max = max(values, default=1) * 1.1 or 1
        out.append(f'<text x="{left}" y="{y0 - 6}">{title}</text>')
        out.append(f'<rect x="{left}" y="{y0}" width="{plot_w}" height="{panel_h}" fill="none" stroke="#999"/>')
        for frac in (0, 0.5, 1):
            out.append(f'<text x="{left - 6}" y="{y0 + panel_h * (1 - frac) + 4:.1f}" text-anchor="end">'
                       f'{v_max * frac:.3g}</text>')
        for minute in range(0, int(t_max // 60) + 1, max(1, int(t_max // 600))):
            out.append(f'<text x="{left + plot_w * minute * 60 / t_max:.1f}" y="{y0 + panel_h + 13}" '
                       f'text-anchor="middle">{minute}</text>')
        for name, colour in COLOURS.items():
            coords = " ".join(f"{left + plot_w * p[0] / t_max:.1f},{y0 + panel_h * (1 - value(p) / v_max):.1f}"
                              for p in series.get(name, []) if value(p) == value(p))
            if coords:
                out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.2" points="{coords}"/>')
    for j, (name, colour) in enumerate(COLOURS.items()):
        out.append(f'<rect x="{width - 150}" y="{top + 20 + j * 16}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{width - 135}" y="{top + 29 + j * 16}">{name}</text>')
    out.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 6}" text-anchor="middle">minutes</text>')
    out.append("</svg>")
    text = "\n".join(out) + "\n"
    if path:
        with open(path, "w") as f:
            f.write(text)
    return text


# --- The run -----------------------------------------------------------------------------------------------

def make_certificate(directory):
    os.makedirs(directory, exist_ok=True)
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-subj", "/CN=localhost", "-days", "2", "-keyout", key, "-out", cert],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


def start_load(load, cycle, servers, tools, seconds, tmp):
    echo, async_echo, http, udp = servers
    loadgen, udpgen, loadtest = tools
    s = str(seconds)
    quiet = ["--quiet", "--warmup", "0", "--timeout", "30s"]
    churn_c, churn_lt = (echo, async_echo) if cycle % 2 == 0 else (async_echo, echo)
    url = f"https://127.0.0.1:{http.port}/"
    j = lambda name: os.path.join(tmp, f"{name}-{cycle}.json")  # noqa: E731
    return [
        load.run("echo-loadgen", [loadgen, "pingpong", "127.0.0.1", str(echo.port), "50", "64", s]),
        load.run("async-loadtest", [loadtest, "echo", "--port", str(async_echo.port), "-c", "50", "--size", "1k",
                                    "--loops", "1", "-d", s, "--json", j("async")] + quiet, j("async")),
        load.run("churn-loadgen", [loadgen, "churn", "127.0.0.1", str(churn_c.port), s, "4"]),
        load.run("churn-loadtest", [loadtest, "connect", "--port", str(churn_lt.port), "-c", "4", "--loops", "1",
                                    "-d", s, "--json", j("churn")] + quiet, j("churn")),
        load.run("tls-handshakes", [loadtest, "http", "--url", url, "--insecure", "-H", "Connection: close",
                                    "-c", "4", "--loops", "1", "-d", s, "--json", j("tlsh")] + quiet, j("tlsh")),
        load.run("tls-keepalive", [loadtest, "http", "--url", url, "--insecure", "-c", "16", "--loops", "1",
                                   "-d", s, "--json", j("tlsk")] + quiet, j("tlsk")),
        load.run("udp-udpgen", [udpgen, "127.0.0.1", str(udp.port), "20", "256", s]),
        load.run("idle-loadgen", [loadgen, "idle", "127.0.0.1", str(churn_lt.port), "1000", str(min(20, seconds))]),
        # Held 10 s: http-hello closes a connection that sends no request for 30 s, and on a busy machine the
        # 200 handshakes before the hold can take several seconds.
        load.run("idle-tls", [loadtest, "idle", "--port", str(http.port), "--tls", "--insecure", "-c", "200",
                              "--loops", "1", "-d", "10", "--json", j("idle")] + quiet, j("idle")),
    ]


def main():
    signal.signal(signal.SIGTERM, _exit_on_signal)  # so that the servers are killed at exit (atexit)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--out", required=True)
    parser.add_argument("--bin", default=".build/release")
    parser.add_argument("--c-bin", default="Benchmarks/c-reference")
    parser.add_argument("--cycle", type=int, default=60)
    parser.add_argument("--pause", type=int, default=15)
    parser.add_argument("--record", action="store_true",
                        help="also record the run as Benchmarks/results/soak.json (docs/benchmarks.md renders it)")
    parser.add_argument("--command", default="Benchmarks/soak.sh", help="the command to record beside the figures")
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if args.pause < SAMPLE_SECONDS or args.cycle - args.pause < 2 * SAMPLE_SECONDS:
        raise SystemExit(2)
    out = os.path.abspath(args.out)
    logs, tmp = os.path.join(out, "logs"), os.path.join(out, "tmp")
    os.makedirs(logs, exist_ok=True)
    os.makedirs(tmp, exist_ok=True)
    cert, key = make_certificate(os.path.join(out, "tls"))
    b = lambda name: os.path.join(os.path.abspath(args.bin), name)  # noqa: E731
    metrics = ["--metrics", "127.0.0.1:0", "--loops", str(LOOPS)]
    servers = [
        Server("echo-server", [b("echo-server")] + metrics, logs),
        Server("async-echo-server", [b("async-echo-server")] + metrics, logs),
        Server("http-hello-tls", [b("http-hello"), "--tls-cert", cert, "--tls-key", key] + metrics, logs),
        Server("udp-echo-server", [b("udp-echo-server")] + metrics, logs),
    ]
    tools = (os.path.join(args.c_bin, "loadgen"), os.path.join(args.c_bin, "udpgen"), b("loadtest"))
    log("servers: " + ", ".join(f"{s.name} pid {s.pid} port {s.port}" for s in servers))
    cold = {s.name: s.descriptors() for s in servers}
    baseline = None
    log(f"descriptors before any load: {cold}")
    load = Load(logs)
    recorder = Recorder(servers, load, os.path.join(out, "soak.csv"))
    load_seconds = args.cycle - args.pause
    hostile = Hostile(servers[0].port, servers[1].port, servers[2].port, servers[3].port, load_seconds - 5)
    fd_failures, gone = [], []
    soak_start = time.monotonic()
    end = soak_start + args.minutes * 60
    cycle = 0
    next_sample = time.monotonic() + SAMPLE_SECONDS
    while time.monotonic() < end and not gone:
        cycle_start = time.monotonic()
        recorder.phase = "load"
        # The generators' measured time ends a few seconds before the pause, their own ramp and teardown
        # included; each is waited for, so the pause starts with no load connection left.
        # Every hostile kind in every warm-up cycle; then two a cycle, so each kind runs every three minutes.
        warming = cycle_start - soak_start < settle_seconds(args.minutes)
        kinds = range(len(hostile.kinds)) if warming else (2 * cycle, 2 * cycle + 1)
        threads = start_load(load, cycle, servers, tools, load_seconds - 6, tmp) \
            + [hostile.fire(cycle, kind) for kind in kinds]
        while any(t.is_alive() for t in threads):
            if time.monotonic() >= next_sample:
                recorder.sample()
                next_sample += SAMPLE_SECONDS
            time.sleep(0.2)
        recorder.phase = "pause"
        pause_end = max(cycle_start + args.cycle, time.monotonic() + args.pause)
        # Descriptors back to the baseline: waited for within the pause. The first pause sets the baseline,
        # which may exceed the count before any load by one per loop (LOOPS).
        def settled(s):
            n = s.descriptors()
            return n == baseline[s.name] if baseline else 0 <= n - cold[s.name] <= LOOPS
        while time.monotonic() < pause_end and not all(settled(s) for s in servers):
            time.sleep(0.25)
        counts = {s.name: s.descriptors() for s in servers}
        if baseline is None:
            baseline = counts
            log(f"descriptors after the first load: {baseline}")
            if any(not 0 <= counts[n] - cold[n] <= LOOPS for n in cold):
                fd_failures.append(f"first pause: descriptors {counts}, before any load {cold}")
        elif counts != baseline:
            fd_failures.append(f"cycle {cycle}: descriptors {counts} at the end of the pause, baseline {baseline}")
        while time.monotonic() < pause_end:
            if time.monotonic() >= next_sample:
                recorder.sample()
                next_sample += SAMPLE_SECONDS
            time.sleep(0.2)
        recorder.phase = "pause-end"
        recorder.sample()
        next_sample = time.monotonic() + SAMPLE_SECONDS
        gone = [s.name for s in servers if not s.alive()]
        log(f"cycle {cycle} done: load runs {load.runs}, errors {load.errors}, "
            + ", ".join(f"{s.name} {s.rss_kib()} KiB {counts[s.name]} fds" for s in servers))
        cycle += 1
    exits = {s.name: s.terminate() for s in servers}
    problems = fd_failures + load.failures + hostile.failures + [f"{n} exited during the soak" for n in gone]
    figures = summarise(recorder.rows, args.minutes, cycle, load, baseline or {}, exits, problems)
    chart(figures, os.path.join(out, "soak.svg"))
    with open(os.path.join(out, "soak.json"), "w") as f:
        json.dump(figures, f, indent=1)
    text = verdict_text(figures)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    if args.record:
        print("recorded", load_recorder().record("soak", args.command, figures, started=started,
                                                 driver="loadtest, loadgen and udpgen (a mixed load)"))
    sys.exit(0 if figures["passed"] else 1)


def load_recorder():
    """Benchmarks/record-result.py, which writes a run into Benchmarks/results."""
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("record_result", os.path.join(here, "record-result.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def settle_seconds(minutes):
    """When RSS starts being compared: minute 5, or the end of the first third of a run under 15 minutes."""
    return 5 * 60 if minutes >= 15 else minutes * 60 / 3


def median_rss(rows):
    """The median RSS (KiB) of a few samples."""
    values = sorted(r["rss_kib"] for r in rows)
    return values[len(values) // 2]


def summarise(rows, minutes, cycles, load, baseline, exits, problems):
    """The run's figures: per server, RSS from the settled part on, descriptors, utilisation, lag, exit;
    the problems found; the verdict; and the samples the chart is drawn from."""
    settle = settle_seconds(minutes)
    servers, passed = {}, not problems
    for name in COLOURS:
        mine = [r for r in rows if r["server"] == name]
        pauses = [r for r in mine if r["phase"] == "pause-end" and r["t_s"] >= settle]
        loaded = [r for r in mine if r["phase"] == "load"]
        lags = sorted(r["lag_p99_ms"] for r in loaded)
        figure = {"exit": exits.get(name), "descriptors": baseline.get(name),
                  "peak_rss_kib": max((r["rss_kib"] for r in mine), default=0),
                  "utilisation_mean": round(sum(r["utilisation"] for r in loaded) / max(1, len(loaded)), 4),
                  "lag_p99_ms_median": lags[len(lags) // 2] if lags else None,
                  "lag_p99_ms_max": lags[-1] if lags else None, "rss_ok": False}
        if len(pauses) >= 2 * RSS_MEDIAN_OF:
            first, last = pauses[:RSS_MEDIAN_OF], pauses[-RSS_MEDIAN_OF:]
            first_kib, last_kib = median_rss(first), median_rss(last)
            growth = round((last_kib - first_kib) / first_kib * 100, 3)
            figure.update(rss_first_kib=first_kib, rss_first_t_s=first[0]["t_s"], rss_last_kib=last_kib,
                          rss_last_t_s=last[-1]["t_s"], rss_growth_pct=growth, rss_ok=growth < 1.0)
        passed &= figure["rss_ok"] and figure["exit"] == 0
        servers[name] = figure
    samples = {name: [[r["t_s"], r["rss_kib"], r["fds"], r["utilisation"], r["lag_p99_ms"]]
                      for r in rows if r["server"] == name] for name in COLOURS}
    return {"minutes": minutes, "cycles": cycles, "sample_seconds": SAMPLE_SECONDS, "settle_s": settle,
            "load_runs": load.runs, "load_errors": load.errors, "servers": servers, "problems": problems,
            "passed": passed, "samples": samples}


def verdict_text(figures):
    """The summary: a line per server, each problem, then PASS or FAIL."""
    lines = [f"soak: {figures['minutes']:g} min, {figures['cycles']} cycles, {figures['load_runs']} load runs, "
             f"{figures['load_errors']} load errors"]
    for name, f in figures["servers"].items():
        if "rss_growth_pct" in f:
            rss = (f"RSS {f['rss_first_kib']} KiB at {f['rss_first_t_s']:.0f} s, {f['rss_last_kib']} KiB at "
                   f"{f['rss_last_t_s']:.0f} s ({f['rss_growth_pct']:+.2f}%, "
                   f"{'ok' if f['rss_ok'] else 'FAIL: 1% or more'})")
        else:
            rss = f"FAIL: too few pause samples after {figures['settle_s']:.0f} s"
        lines.append(f"{name}: {rss}; peak {f['peak_rss_kib']} KiB; descriptors {f['descriptors']} at every pause; "
                     f"loaded utilisation mean {f['utilisation_mean'] * 100:.0f}%; lag p99 per 10 s: median "
                     f"{f['lag_p99_ms_median']} ms, max {f['lag_p99_ms_max']} ms; exit on SIGTERM {f['exit']}")
    lines += ["FAIL: " + problem for problem in figures["problems"]]
    lines.append("PASS" if figures["passed"] else "FAIL")
    return "\n".join(lines) + "\n"

if __name__ == "__main__":
    main()
