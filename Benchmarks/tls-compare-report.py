#!/usr/bin/env python3
"""Prints tls-compare.sh's Markdown tables from a run's results.jsonl: per case and server the median over
rounds, the rounds themselves, and the ratio to nginx (ours / nginx: below 1 is better for us).

    python3 tls-compare-report.py /tmp/tls-compare-YYYYmmdd-HHMMSS [--record NAME]

With --record NAME it also records the medians and every round as Benchmarks/results/NAME.json
(record-result.py), which docs/benchmarks.md's TLS tables are rendered from (render-docs.py).
"""
import importlib.util
import json
import os
import re
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]
runs = [json.loads(line) for line in open(f"{out}/results.jsonl") if line.strip()]
meta = {}
try:
    meta_lines = open(f"{out}/meta.txt").readlines()
    print("".join(f"    {line}" for line in meta_lines))
    meta = dict(line.rstrip("\n").split(": ", 1) for line in meta_lines if ": " in line)
except OSError:
    pass

by = defaultdict(lambda: defaultdict(list))
order = defaultdict(list)
for r in runs:
    by[r["case"]][r["server"]].append(r)
    if r["server"] not in order[r["case"]]:
        order[r["case"]].append(r["server"])

TITLES = {
    "keepalive": ("HTTPS hello, keep-alive, wrk -t1 -c100", "µs/request", "requests/s"),
    "close": ("New connection per request, wrk -t1 -c16 -H 'Connection: close' (resumed handshakes)", "µs/connection", "connections/s"),
    "resume": ("New connection per request, loadtest http -c 16 --tls-resume -H 'Connection: close' (resumed handshakes)", "µs/connection", "connections/s"),
    "full": ("New connection per request, 16 × openssl s_time -new (full handshakes)", "µs/connection", "connections/s"),
    "plain": ("Plaintext hello, keep-alive, wrk -t1 -c100", "µs/request", "requests/s"),
    "idle": ("Idle TLS connections after the handshake", "RSS B/connection", "malloc B/connection"),
    "idlereq": ("Idle TLS keep-alive connections after one request each", "RSS B/connection", "malloc B/connection"),
    "idleplain": ("Idle plain TCP connections (the same client without TLS)", "RSS B/connection", "malloc B/connection"),
}


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, digits=1):
    return "-" if v is None else f"{v:,.{digits}f}"


CASES = ["keepalive", "close", "resume", "full", "idle", "idlereq", "plain", "idleplain"]
for case in CASES:
    if case not in by:
        continue
    title, first, second = TITLES[case]
    print(f"\n### {case}: {title}\n")
    nginx = "nginx-plain" if case in ("plain", "idleplain") else "nginx"
    idle = case.startswith("idle")
    if idle:
        key1, key2 = "rss_bytes_per_conn", "heap_bytes_per_conn"
    else:
        key1, key2 = "us_per_op", "per_second"
    base1 = med([r.get(key1) for r in by[case].get(nginx, [])])
    base2 = med([r.get(key2) for r in by[case].get(nginx, [])])
    print(f"| server | {first} (median) | × nginx | {second} (median) | × nginx | rounds ({first}) | errors |")
    print("| --- | ---: | ---: | ---: | ---: | --- | ---: |")
    for server in order[case]:
        rs = by[case][server]
        v1, v2 = med([r.get(key1) for r in rs]), med([r.get(key2) for r in rs])
        ratio1 = f"{v1 / base1:.2f}" if v1 is not None and base1 else "-"
        ratio2 = f"{v2 / base2:.2f}" if v2 is not None and base2 else "-"
        rounds = ", ".join(fmt(r.get(key1), 0 if idle else 1) for r in rs)
        errors = sum(int(r.get("errors") or 0) for r in rs) if not idle else \
            sum(int(r.get("connections") or 0) < 1 for r in rs)
        print(f"| {server} | {fmt(v1, 0 if idle else 1)} | {ratio1} | {fmt(v2, 0)} | {ratio2} | {rounds} | {errors} |")


def record(name):
    """Records the medians and rounds of every case and server as Benchmarks/results/NAME.json."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("record_result", os.path.join(here, "record-result.py"))
    recorder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorder)
    cases = {}
    for case in [c for c in CASES if c in by]:
        for server in order[case]:
            rs = by[case][server]
            if case.startswith("idle"):
                entry = {"rss": med([r.get("rss_bytes_per_conn") for r in rs]),
                         "heap": med([r.get("heap_bytes_per_conn") for r in rs]),
                         "unit": "B/conn", "rounds": [r.get("rss_bytes_per_conn") for r in rs],
                         "heap_rounds": [r.get("heap_bytes_per_conn") for r in rs],
                         "connections": min(int(r.get("connections") or 0) for r in rs)}
            else:
                entry = {"cost": med([r.get("us_per_op") for r in rs]), "rate": med([r.get("per_second") for r in rs]),
                         "unit": "µs/request" if case in ("keepalive", "plain") else "µs/conn",
                         "rounds": [r.get("us_per_op") for r in rs],
                         "errors": sum(int(r.get("errors") or 0) for r in rs)}
            cases.setdefault(case, {})[server] = entry
    number = lambda key: float(meta[key]) if key in meta else None
    nginx = re.search(r"nginx/[\d.]+", meta.get("nginx", ""))
    figures = {"duration_s": number("duration_s"), "warmup_s": number("warmup_s"),
               "rounds": int(number("rounds") or 0) or None, "idle_connections": int(number("idle_connections") or 0) or None,
               "swift": meta.get("swift") or None, "nginx": nginx.group(0) if nginx else None,
               "openssl": meta.get("openssl"), "loadavg_start": meta.get("loadavg at start"), "cases": cases}
    started = meta.get("date")
    return recorder.record(name, meta.get("command", "Benchmarks/tls-compare.sh"), figures,
                           driver="wrk, loadtest and tls-idle-client.py (one thread each)", started=started)


if "--record" in sys.argv[2:]:
    print("\nrecorded", record(sys.argv[sys.argv.index("--record") + 1]))
