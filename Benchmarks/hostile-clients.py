#!/usr/bin/env python3
"""Hostile and careless clients against a server: its memory and another client's latency meanwhile.

    Benchmarks/hostile-clients.py [--scenarios unread,unread10,slow,flood] [--seconds 10] \
        NAME=KIND:COMMAND ...

KIND is `echo` (bytes come back) or `http` (each `GET / HTTP/1.1` gets one response); COMMAND is the server's
command line with `{port}` where the port goes; the server must listen on 127.0.0.1. Each scenario starts the
server afresh, pinned to core 0 (`taskset -c 0`); the clients run on core 1. Scenarios:

- `unread`: one client sends up to 256 MiB (echo: bytes; http: pipelined GETs) and never reads a reply.
- `unread10`: ten such clients at once.
- `slow`: one client sends for --seconds and reads one byte every 10 ms.
- `flood`: one client sends 1 GiB (echo) or pipelined GETs for --seconds (http) as fast as it can and reads
  every reply as fast as it can.

Meanwhile a probe, in its own process on the same server (and, with one loop, the same loop), makes a round
trip every 10 ms (64 bytes, or one GET). For each scenario: the server's RSS before (after the probe's first
round trips), its peak (VmHWM) and after the clients close, the bytes the server took from the clients, and
the probe's round-trip times (median, p99, max). Only loopback; every wait is bounded.
"""
import argparse
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
import time

MIB = 1 << 20
GET = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(port, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=timeout)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def read_http_response(sock, pending):
    """Reads one response (head + Content-Length body) from sock; returns the bytes left over."""
    while b"\r\n\r\n" not in pending:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed mid-response")
        pending += chunk
    head, _, rest = pending.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed mid-body")
        rest += chunk
    return rest[length:]


def probe(port, kind, stop, results):
    """One round trip every 10 ms until `stop` is set; sends the round-trip times (s) back."""
    os.sched_setaffinity(0, {1})
    sock = connect(port)
    sock.settimeout(30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times, pending = [], b""
    message = b"p" * 64
    while not stop.is_set():
        start = time.monotonic()
        if kind == "echo":
            sock.sendall(message)
            got = 0
            while got < len(message):
                chunk = sock.recv(len(message) - got)
                if not chunk:
                    raise ConnectionError("probe: server closed")
                got += len(chunk)
        else:
            sock.sendall(GET)
            pending = read_http_response(sock, pending)
        times.append(time.monotonic() - start)
        time.sleep(0.01)
    sock.close()
    results.send(times)


def sender(port, kind, total, sent, stop, reader=None):
    """Sends up to `total` bytes as fast as the server takes them; stops after 3 s without progress."""
    sock = connect(port)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 256 * 1024)
    block = (GET * (MIB // len(GET))) if kind == "http" else os.urandom(MIB)
    if reader:
        threading.Thread(target=reader, args=(sock, stop), daemon=True).start()
    sock.settimeout(3.0)
    view, offset = memoryview(block), 0  # a partial send goes on from where it stopped: no request cut
    try:
        while sent[0] < total and not stop.is_set():
            try:
                count = sock.send(view[offset:])
                sent[0] += count
                offset = (offset + count) % len(block)
            except socket.timeout:
                break  # the server pushes back: its window is closed
    except OSError:
        pass
    return sock


def drain(sock, stop):
    sock_timeout = 0.5
    sock.settimeout(sock_timeout)
    while not stop.is_set():
        try:
            if not sock.recv(4 * MIB):
                return
        except socket.timeout:
            continue
        except OSError:
            return


def trickle(sock, stop):
    while not stop.is_set():
        try:
            sock.recv(1)
        except OSError:
            return
        time.sleep(0.01)


def run(name, kind, command, scenario, seconds):
    port = free_port()
    argv = ["taskset", "-c", "0"] + [a.replace("{port}", str(port)) for a in command.split()]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        connect(port).close()
        stop_probe = multiprocessing.Event()
        receive, send = multiprocessing.Pipe(duplex=False)
        prober = multiprocessing.Process(target=probe, args=(port, kind, stop_probe, send))
        prober.start()
        time.sleep(0.5)
        before = rss_kib(server.pid)

        stop = threading.Event()
        clients = 10 if scenario == "unread10" else 1
        total = {"flood": 1024 * MIB if kind == "echo" else 1 << 60}.get(scenario, 256 * MIB)
        reader = {"flood": drain, "slow": trickle}.get(scenario)
        counters = [[0] for _ in range(clients)]
        socks = [None] * clients

        def client(i):
            socks[i] = sender(port, kind, total, counters[i], stop, reader)

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
        start = time.monotonic()
        for t in threads:
            t.start()
        limit = seconds if scenario in ("slow", "flood") else 60
        # The slow reader is held for the whole time, whatever its sender does.
        while (scenario == "slow" or any(t.is_alive() for t in threads)) and time.monotonic() - start < limit:
            time.sleep(0.1)
        stop.set()
        elapsed = time.monotonic() - start
        for t in threads:
            t.join(10)
        during = rss_kib(server.pid)
        peak = rss_kib(server.pid, "VmHWM")
        stop_probe.set()
        times = sorted(receive.recv())
        prober.join(10)
        for s in socks:
            if s:
                s.close()
        time.sleep(1.0)
        after = rss_kib(server.pid)
        sent = sum(c[0] for c in counters)
        n = len(times)
        print(f"{name:18} {scenario:9} sent {sent / MIB:8.1f} MiB in {elapsed:5.1f} s  "
              f"RSS before {before / 1024:6.1f} MiB, end {during / 1024:6.1f}, peak {peak / 1024:6.1f}, "
              f"after {after / 1024:6.1f}  probe n={n} p50 {times[n // 2] * 1e3:6.2f} ms "
              f"p99 {times[min(n - 1, n * 99 // 100)] * 1e3:7.2f} ms max {times[-1] * 1e3:7.2f} ms",
              flush=True)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default="unread,unread10,slow,flood")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("servers", nargs="+", help="NAME=KIND:COMMAND (with {port})")
    args = parser.parse_args()
    os.sched_setaffinity(0, {1})
    for scenario in args.scenarios.split(","):
        for spec in args.servers:
            name, _, rest = spec.partition("=")
            kind, _, command = rest.partition(":")
            run(name, kind, command, scenario, args.seconds)


if __name__ == "__main__":
    main()
