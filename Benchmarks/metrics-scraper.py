#!/usr/bin/env python3
"""A hostile scraper of a `GET /metrics` endpoint, for Benchmarks/metrics-scraper.sh.

    Benchmarks/metrics-scraper.py --port P [--seconds 10] [--flood 8] [--idle 1000] [--report FILE]

For --seconds it keeps --flood connections each sending pipelined `GET /metrics` as fast as the server takes
them and reading every reply as fast as it comes (one the server closes after serving it is opened again at
once), and tries to hold --idle connections open that send nothing (one the server closes is opened again a
second later; so is a flood connection closed unanswered). One thread, non-blocking sockets, 127.0.0.1 only;
every wait is bounded. At the end it writes `responses=N bytes=N connects=N unanswered=N cpu_s=T` to --report,
or stdout: unanswered counts the connections closed before any byte came back (refused over the server's cap,
or timed out), cpu_s is the scraper's own CPU time (which, on a small machine, competes with the load
generator's).
"""
import argparse
import errno
import resource
import selectors
import socket
import time

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
BURST = REQUEST * 1024  # about 40 KiB of pipelined requests per send


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--flood", type=int, default=8)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--report")
    args = parser.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.idle + args.flood + 64)), hard))
    selector = selectors.DefaultSelector()
    stats = {"responses": 0, "bytes": 0, "connects": 0, "unanswered": 0}
    reopen = []  # (time, kind) of connections to open again

    def open_connection(kind):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(("127.0.0.1", args.port))
        except BlockingIOError:
            pass
        except OSError:
            sock.close()
            reopen.append((time.monotonic() + 1, kind))
            return
        stats["connects"] += 1
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if kind == "flood" else 0)
        selector.register(sock, events, {"kind": kind, "tail": b"", "served": False, "answered": False})

    def closed(sock, state):
        if not state["answered"]:
            stats["unanswered"] += 1
        selector.unregister(sock)
        sock.close()
        again = 0 if state["kind"] == "flood" and state["served"] else 1
        reopen.append((time.monotonic() + again, state["kind"]))

    for _ in range(args.flood):
        open_connection("flood")
    for _ in range(args.idle):
        open_connection("idle")

    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        now = time.monotonic()
        due = [kind for at, kind in reopen if at <= now]
        reopen[:] = [(at, kind) for at, kind in reopen if at > now]
        for kind in due:
            open_connection(kind)
        for key, mask in selector.select(timeout=0.1):
            sock, state = key.fileobj, key.data
            if mask & selectors.EVENT_READ:
                try:
                    data = sock.recv(1 << 20)
                except (BlockingIOError, InterruptedError):
                    data = None
                except OSError:
                    closed(sock, state)
                    continue
                if data is not None:
                    if not data:
                        closed(sock, state)
                        continue
                    stats["bytes"] += len(data)
                    state["answered"] = True
                    # Responses counted by their status lines (a line split between two reads is kept).
                    text = state["tail"] + data
                    served = text.count(b"HTTP/1.1 200 ")
                    stats["responses"] += served
                    state["served"] = state["served"] or served > 0
                    # Shorter than a status line, so that no line is counted twice.
                    state["tail"] = text[-12:]
            if mask & selectors.EVENT_WRITE:
                try:
                    sock.send(BURST)
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as error:
                    if error.errno not in (errno.EAGAIN,):
                        closed(sock, state)
    stats["cpu_s"] = f"{time.process_time():.2f}"
    line = " ".join(f"{name}={value}" for name, value in stats.items())
    if args.report:
        with open(args.report, "w") as report:
            report.write(line + "\n")
    else:
        print(line)


if __name__ == "__main__":
    main()
