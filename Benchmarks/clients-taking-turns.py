#!/usr/bin/env python3
"""Two echo clients beside each other against one C echo_server, taking turns in short slices.

    python3 Benchmarks/clients-taking-turns.py LOADTEST CONNS [--rounds 3] [--slices 10] [--slice 0.5]

Each round starts the C `echo_server` (Benchmarks/c-reference, built with make) pinned to core 0, then both
clients pinned to core 1, each with CONNS connections and 64-byte ping-pong: the C `loadgen` and `loadtest
echo --loops 1`. Once every connection is up, both are stopped (SIGSTOP), and they take turns: one is let go
(SIGCONT) for a slice of --slice seconds and stopped again; when the server has answered what it still had
in flight, the other takes its turn. The round trips of a slice are what the server sent in it, from the
kernel's counters of its sockets (`ss -ti`: bytes_sent, 64 per round trip), read while both clients are
stopped; a client's CPU in it is its threads' run time (/proc/PID/task/*/schedstat, in nanoseconds).
--slices turns each, after one each that is not counted.

Why: on this shared machine a client's round trips per second drift by tens of percent from one window to
the next, more than the clients differ. Slices a fraction of a second apart put both clients under the same
drift, so their paired ratios are steady. Stopping a client costs it nothing it would not pay anyway: its
replies wait in its socket buffers and are read when it runs again.

Prints, per round, each client's rate and CPU per round trip, then one JSON line (`RESULT {...}`): per client
the rate per slice, its median, and the median of the slices' paired ratios (loadtest ÷ loadgen), which
loadtest-vs-loadgen.sh records.
"""
import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
C_BIN = os.environ.get("C_REF_DIR", os.path.join(HERE, "c-reference"))
DRAIN_S = 0.02  # what the server still had in flight when a client stopped: answered within this
MESSAGE = 64


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sent_bytes(port):
    """Bytes the server has sent on all its connections (the kernel's count, per socket, summed)."""
    out = subprocess.run(["ss", "-tinH", "state", "established", f"sport = :{port}"],
                         capture_output=True, text=True, check=True).stdout
    return sum(int(n) for n in re.findall(r"bytes_sent:(\d+)", out))


def established(port):
    out = subprocess.run(["ss", "-tnH", "state", "established", f"sport = :{port}"],
                         capture_output=True, text=True, check=True).stdout
    return len(out.splitlines())


def cpu_ns(pid):
    """Run time of all the process's threads so far, in nanoseconds."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"clients-taking-turns: timed out waiting for {what}")
        time.sleep(0.05)


def one_round(loadtest, conns, slices, slice_s):
    port = free_port()
    long_s = str(int((slices + 1) * 2 * (slice_s + 1) + 60))
    processes = []
    try:
        server = subprocess.Popen(["taskset", "-c", "0", os.path.join(C_BIN, "echo_server"), str(port)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(server)
        wait_for(lambda: subprocess.run(["ss", "-tlnH", f"sport = :{port}"], capture_output=True,
                                        text=True).stdout.strip() != "", 10, "the server to listen")
        env = dict(os.environ, LOADGEN_WARMUP="0")
        clients = {
            "loadgen": subprocess.Popen(["taskset", "-c", "1", os.path.join(C_BIN, "loadgen"), "pingpong", "127.0.0.1",
                                         str(port), str(conns), str(MESSAGE), long_s],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env),
            "loadtest": subprocess.Popen(["taskset", "-c", "1", loadtest, "echo", "--host", "127.0.0.1", "--port",
                                          str(port), "--connections", str(conns), "--size", str(MESSAGE), "--loops",
                                          "1", "--duration", long_s, "--warmup", "0", "--quiet"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        }
        processes.extend(clients.values())
        wait_for(lambda: established(port) >= 2 * conns, 60, f"{2 * conns} connections")
        time.sleep(0.3)
        for client in clients.values():
            client.send_signal(signal.SIGSTOP)
        time.sleep(DRAIN_S)
        figures = {name: {"rates": [], "cpu_us": []} for name in clients}
        for turn in range(2 * (slices + 1)):
            name = ("loadgen", "loadtest")[turn % 2]
            client = clients[name]
            if client.poll() is not None:
                raise RuntimeError(f"clients-taking-turns: {name} exited with {client.returncode}")
            bytes0, cpu0 = sent_bytes(port), cpu_ns(client.pid)
            start = time.monotonic()
            client.send_signal(signal.SIGCONT)
            time.sleep(slice_s)
            client.send_signal(signal.SIGSTOP)
            elapsed = time.monotonic() - start
            time.sleep(DRAIN_S)
            round_trips = (sent_bytes(port) - bytes0) / MESSAGE
            if turn >= 2 and round_trips > 0:  # the first turn of each is not counted
                figures[name]["rates"].append(round_trips / elapsed)
                figures[name]["cpu_us"].append((cpu_ns(client.pid) - cpu0) / 1e3 / round_trips)
        return figures
    finally:
        for process in processes:
            try:
                process.send_signal(signal.SIGCONT)
                process.kill()
            except ProcessLookupError:
                pass
            process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("loadtest")
    parser.add_argument("conns", type=int)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--slices", type=int, default=10)
    parser.add_argument("--slice", type=float, default=0.5)
    args = parser.parse_args()
    subprocess.run(["make", "-s", "-C", C_BIN, "echo_server", "loadgen"], check=True)
    rates = {"loadgen": [], "loadtest": []}
    cpu = {"loadgen": [], "loadtest": []}
    ratios = []
    for round_ in range(1, args.rounds + 1):
        figures = one_round(os.path.abspath(args.loadtest), args.conns, args.slices, args.slice)
        g, l = figures["loadgen"]["rates"], figures["loadtest"]["rates"]
        ratios += [b / a for a, b in zip(g, l) if a > 0]
        for name in rates:
            rates[name] += figures[name]["rates"]
            cpu[name] += figures[name]["cpu_us"]
        print(f"  {args.conns} connections, round {round_}: loadgen {statistics.median(g):,.0f}/s "
              f"({statistics.median(figures['loadgen']['cpu_us']):.2f} µs CPU per round trip), loadtest "
              f"{statistics.median(l):,.0f}/s ({statistics.median(figures['loadtest']['cpu_us']):.2f} µs)",
              file=sys.stderr)
    result = {name: {"rate": statistics.median(rates[name]), "slices": [round(r) for r in rates[name]],
                     "cpu_us_per_round_trip": round(statistics.median(cpu[name]), 3)} for name in rates}
    q1, median, q3 = statistics.quantiles(ratios, n=4)
    result["ratio"] = median
    result["ratio_quartiles"] = [q1, q3]
    result["paired_slices"] = len(ratios)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
