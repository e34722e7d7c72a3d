#!/usr/bin/env python3
"""Renders every measured figure in the docs from the recorded runs, and checks that no page carries another.

    python3 Benchmarks/render-docs.py            # rewrite the rendered regions, the inline figures and the charts
    python3 Benchmarks/render-docs.py --check    # exit 1 (with a diff) if a page differs from the results, or
                                                 # if a page or a --help text carries a figure not rendered

The benchmark scripts record each run as Benchmarks/results/NAME.json (record-result.py, with
BENCH_RECORD=1): the figures, the command, the date, the commit, the machine and its load average. The pages
(README.md, CHANGELOG.md, docs/*.md and the DocC catalogs, Sources/*/*.docc) hold two kinds of rendered text:

    <!-- BEGIN generated: NAME -->            a table (or more) that RENDERERS[NAME] writes, with the run's
    ...                                       date, command and driver beside it
    <!-- END generated -->

    <!-- fig:RESULT PATH [AGGREGATE] [FORMAT] -->3,412<!-- /fig -->

An inline figure is one value of Benchmarks/results/RESULT.json: PATH is a dotted path inside its "figures"
(a `*` takes every key at that level), AGGREGATE is min, max or median when the path names several values, and
FORMAT is a Python format spec (default `,` for whole numbers, `,.2f` otherwise). So a figure is measured once
and written down once; text outside the markers is left alone, and the figure check (find-figures.py) fails
on a measured figure outside them. A wall-clock run that started at a load average above the machine's core
count is not used (its region says so, and an inline figure from it fails the render); instruction counts
(recorded as load-independent) are used whatever the load. Python 3 standard library only; CI runs --check.
"""
import difflib
import glob
import importlib.util
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
SVG = os.path.join(ROOT, "docs", "benchmarks-servers.svg")
SOAK_SVG = os.path.join(ROOT, "docs", "benchmarks-soak.svg")
REGION = re.compile(r"(<!-- BEGIN generated: ([\w-]+) -->\n)(.*?)(<!-- END generated -->)", re.S)
INLINE = re.compile(r"(<!-- fig:([^>]*?) -->)(.*?)(<!-- /fig -->)", re.S)


def load_module(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report = load_module("compare_report", "compare-report.py")
soak = load_module("soak", "soak.py")
finder = load_module("find_figures", "find-figures.py")


# Runs made on a machine busier than its cores, by name: their figures are not used (see refusal()).
REFUSED = {}


def start_load(result):
    """The load averages when a run started, as recorded (compare.sh and tls-compare.sh kept them among the
    figures before record-result.py took them), or None."""
    return result["machine"].get("loadavg_at_start") or result["figures"].get("loadavg_start")


def load_of(result):
    """The load average a run is judged by, and where it comes from: the 1-minute figure when the run started
    (the work already on the machine, before the run adds its own), else, for runs that did not record it,
    the 15-minute figure when it ended (mostly what ran before a run of minutes)."""
    start = start_load(result)
    if start:
        return float(start.split()[0]), "when it started"
    end = (result["machine"].get("loadavg_at_end") or "").split()
    if len(end) >= 3:
        return float(end[2]), "over the 15 minutes before it ended (the load when it started was not recorded)"
    return None, "not recorded"


def usable(result):
    """Whether a run's figures may be shown: counts that do not depend on the load always; a wall-clock run
    only if it started on a machine no busier than its cores."""
    if result.get("load_independent"):
        return True
    load, _ = load_of(result)
    return load is not None and load <= (result["machine"].get("nproc") or 1)


def load_results():
    results = {}
    for path in sorted(glob.glob(os.path.join(RESULTS, "*.json"))):
        with open(path) as f:
            result = json.load(f)
        name = os.path.basename(path)[:-5]
        if usable(result):
            results[name] = result
        else:
            REFUSED[name] = result
    return results


# ---------------------------------------------------------------------------------------------------------
# Formatting


def when(result):
    """The run's date and time, e.g. 2026-11-27 04:31 UTC (when it started, if recorded)."""
    stamp = result.get("started") or result["date"]
    return stamp[:10] + " " + stamp[11:16] + " UTC"


def count(value):
    return "" if value is None else f"{value:,.0f}"


def refusal(name):
    """Why a recorded run is not shown, or None."""
    result = REFUSED.get(name)
    if result is None:
        return None
    load, source = load_of(result)
    cores = result["machine"].get("nproc")
    figure = "no load average" if load is None else f"a load average of {load:g} {source}"
    return (f"the run of {when(result)} (`{result['command']}`) had {figure}, on {cores} cores: other work "
            "shared the machine, and wall-clock figures swing with it")


def missing(command, *names):
    """The text of a region without a usable run: why, and the command that records one."""
    reasons = [r for r in (refusal(n) for n in names) if r]
    if reasons:
        return (f"_Not shown: {'; '.join(reasons)}. Run `BENCH_RECORD=1 {command}` on a quiet machine "
                "and render again._\n")
    return f"_Not recorded yet: run `BENCH_RECORD=1 {command}`._\n"


def load_text(result):
    """The machine's load around a run: at its start (or "not recorded") and at its end."""
    start, end = start_load(result), result["machine"].get("loadavg_at_end")
    text = f"load average {start.split()[0]} at the start" if start else "load average at the start not recorded"
    return text + (f", {end.split()[0]} at the end" if end else "")


def run_line(result, extra=""):
    """What a table comes from: date, driver, machine load, command."""
    text = f"Run: {when(result)}"
    if result.get("driver"):
        text += f", driven by {result['driver']}"
    if extra:
        text += f", {extra}"
    text += f"; {load_text(result)} ({result['machine'].get('nproc')} cores); `{result['command']}`."
    return text + (f" {result['note']}" if result.get("note") else "")


# ---------------------------------------------------------------------------------------------------------
# Regions


def render_machine(results):
    machines = {}
    for result in results.values():
        m = result["machine"]
        machines.setdefault((m["cpu"], m["nproc"], m["kernel"]), []).append(result)
    lines = ["| CPU | cores (`nproc`) | kernel | runs shown |", "| --- | ---: | --- | ---: |"]
    for (cpu, nproc, kernel), runs in sorted(machines.items()):
        lines.append(f"| {cpu} | {nproc} | {kernel} | {len(runs)} |")
    toolchains = sorted({r["figures"].get("swift") for r in results.values() if r["figures"].get("swift")})
    nginx = sorted({r["figures"].get("nginx") for r in results.values() if r["figures"].get("nginx") not in (None, "none")})
    out = "\n".join(lines) + "\n"
    if toolchains:
        out += "\nToolchain: " + "; ".join(toolchains) + " (release builds)."
    if nginx:
        out += " nginx: " + ", ".join(nginx) + " (Debian's `nginx-light`, one worker)."
    return out + "\n" if toolchains or nginx else out


INSTRUCTION_ROWS = [
    ("C reference (`echo_server`; `udp_echo_server`)", "echo_server", "udp_echo_server"),
    ("ours (`echo-server`; `udp-echo-server`)", "echo-server", "udp-echo-server"),
    ("ours, async (`async-echo-server`)", "async-echo-server", None),
]


def render_instructions(results):
    lines = ["| server | 64 B echo round trip (10 connections) | churned connection (16 in parallel) "
             "| echoed UDP datagram (100 flows / 1,000 flows) |", "| --- | ---: | ---: | ---: |"]
    used, names = [], []

    def figure(name):
        names.append(name)
        result = results.get(name)
        if result is None:
            return None
        used.append(result)
        return result["figures"]["instructions"]

    for title, tcp, udp in INSTRUCTION_ROWS:
        roundtrip = figure(f"instructions-roundtrip-{tcp}-10x64")
        connection = figure(f"instructions-connection-{tcp}")
        datagram = [figure(f"instructions-datagram-{udp}-{flows}flows") for flows in (100, 1000)] if udp else []
        udp_text = " / ".join(count(d) if d is not None else "–" for d in datagram) if any(d is not None for d in datagram) else ""
        lines.append(f"| {title} | {count(roundtrip)} | {count(connection)} | {udp_text} |")
    if not used:
        return missing("Benchmarks/profile/instructions-per-roundtrip.sh .build-compare/release/echo-server --loops 1")
    dates = sorted(when(r) for r in used)
    order = {name: i for i, name in enumerate(names)}
    out = "\n".join(lines) + "\n\n"
    out += (f"Runs: {dates[0]} to {dates[-1]}, each server alone under callgrind, driven by the C `loadgen` "
            "(`udpgen` for UDP); every count divides the difference between a 2 s and a 5 s run by the operations "
            "done between them. The commands, from the repository root:\n\n```sh\n")
    for result in sorted(used, key=lambda r: order[r["name"]]):
        out += result["command"] + "\n"
    return out + "```\n"


SERVER_COLUMNS = [
    ("C reference", "c", "c-http"),
    ("ours", "ours", "ours-http"),
    ("ours, async", "ours-async", None),
    ("SwiftNIO", "nio", "nio-http"),
    ("NIOAsyncChannel", "nio-async", None),
    ("nginx (1 worker)", None, "nginx"),
]
UNIT_TEXT = {"µs/op": "µs per round trip", "µs/conn": "µs per connection", "µs/MiB": "µs per MiB",
             "B/conn": "bytes per connection"}


def cost_text(entry):
    if entry is None or entry.get("cost") is None:
        return ""
    cost = entry["cost"]
    text = f"{cost:,.0f}" if entry["unit"] == "B/conn" or cost >= 100 else f"{cost:.2f}"
    rate = entry.get("rate")
    if rate:
        text += f" · {rate:,.0f} MiB/s" if entry.get("rate_unit") == "MiB/s" else f" · {rate / 1000:,.1f}k/s"
    if entry.get("errors"):
        text += f" ({entry['errors']} errors)"
    return text


def ratio_text(ours, peer, unit):
    """ours ÷ peer: the median of the rounds' paired ratios (the two servers ran one after the other in each
    round, so a round's ratio cancels most of what the shared machine did to both) with their range, or the
    ratio of the medians when the rounds do not pair; nothing for idle memory (a difference of bytes is not a
    ratio)."""
    if not ours or not peer or not ours.get("cost") or not peer.get("cost") or unit == "B/conn":
        return ""
    a, b = ours.get("costs") or [], peer.get("costs") or []
    if len(a) == len(b) > 1 and all(b):
        ratios = [x / y for x, y in zip(a, b)]
        return f"{statistics.median(ratios):.2f} ({min(ratios):.2f} to {max(ratios):.2f})"
    return f"{ours['cost'] / peer['cost']:.2f}"


def render_servers(results, name, command):
    result = results.get(name)
    if result is None:
        return missing(command, name)
    figures = result["figures"]
    summary = report.summary_from_record(figures)
    scenarios = [s for s, _ in report.SCENARIOS if s in figures["scenarios"]]

    def server_of(column, scenario):
        return column[2] if scenario == "http" else column[1]

    columns = [c for c in SERVER_COLUMNS if any((s, server_of(c, s)) in summary for s in scenarios)]
    with_nginx = any(k[1] == "nginx" for k in summary)
    with_async = any(k[1] == "ours-async" for k in summary)
    header = ["scenario", "unit"] + [c[0] for c in columns] + ["ours ÷ C"] + (["ours ÷ nginx"] if with_nginx else []) \
        + (["async ÷ ours"] if with_async else [])
    lines = ["| " + " | ".join(header) + " |", "| --- | --- |" + " ---: |" * (len(header) - 2)]
    for scenario in scenarios:
        entries = [summary.get((scenario, server_of(c, scenario))) for c in columns]
        unit = next((e["unit"] for e in entries if e), "")
        ours = summary.get((scenario, "ours-http" if scenario == "http" else "ours"))
        c = summary.get((scenario, "c-http" if scenario == "http" else "c"))
        ratios = [ratio_text(ours, c, unit)]
        if with_nginx:
            ratios.append(ratio_text(ours, summary.get((scenario, "nginx")), unit))
        if with_async:
            ratios.append(ratio_text(summary.get((scenario, "ours-async")), ours, unit))
        unit_text = "µs per request" if scenario == "http" else UNIT_TEXT.get(unit, unit)
        lines.append("| " + " | ".join([report.TITLES[scenario], unit_text] +
                                        [cost_text(e) for e in entries] + ratios) + " |")
    rounds = figures.get("rounds")
    extra = f"{rounds} round{'s' if rounds != 1 else ''} of {figures.get('duration_s')} s windows, servers alternating"
    if figures.get("slice_s"):
        extra = (f"{rounds} round{'s' if rounds != 1 else ''}, in each of which every server of a ping-pong or churn "
                 f"scenario had {figures.get('duration_s')} s of load in turns of {figures['slice_s']} s")
    out = "\n".join(lines) + "\n\n" + run_line(result, extra)
    if "--no-nio" in result["command"].split():
        out += " The SwiftNIO peers were left out of this run (`--no-nio`)."
    out += "\n"
    if chart_source(results) == name:
        out += ("\n![Server CPU per round trip or connection, and idle memory per connection, per server and "
                "scenario, from the run of the table above](benchmarks-servers.svg)\n")
    rounds_table = []
    for scenario in scenarios:
        cells = []
        for column in columns:
            entry = summary.get((scenario, server_of(column, scenario)))
            costs = entry["costs"] if entry else []
            cells.append(", ".join(f"{v:,.0f}" if entry["unit"] == "B/conn" or v >= 100 else f"{v:.2f}" for v in costs))
        rounds_table.append("| " + " | ".join([report.TITLES[scenario]] + cells) + " |")
    if any(len(summary[k]["costs"]) > 1 for k in summary):
        out += ("\nEvery round, in order (the table above gives the medians, and its ratios are the medians of "
                "the rounds' paired ratios):\n\n| scenario | " +
                " | ".join(c[0] for c in columns) + " |\n| --- |" + " --- |" * len(columns) + "\n" +
                "\n".join(rounds_table) + "\n")
    return out


def render_udp_servers(results):
    result = results.get("udp-servers")
    if result is None:
        return missing("Benchmarks/udp-compare.sh 5 100 1000", "udp-servers")
    names = [("c-udp_echo_server", "C reference"), ("udp-echo-server", "ours (`udp-echo-server`)"),
             ("nio-udp-echo-server", "SwiftNIO")]
    flows = result["figures"]["flows"]
    used = [(key, title) for key, title in names if any(key in f for f in flows.values())]
    lines = ["| flows | " + " | ".join(t for _, t in used) + " | ours ÷ C | datagrams lost |",
             "| ---: |" + " ---: |" * (len(used) + 1) + " ---: |"]
    for n in sorted(flows, key=int):
        servers = flows[n]
        cells = [f"{servers[k]['cost']:.2f}" if k in servers else "" for k, _ in used]
        c, ours = servers.get("c-udp_echo_server"), servers.get("udp-echo-server")
        ratio = f"{ours['cost'] / c['cost']:.2f}" if c and ours else ""
        lost = sum(sum(s["lost"]) for s in servers.values())
        lines.append(f"| {int(n):,} | " + " | ".join(cells) + f" | {ratio} | {lost} |")
    extra = f"{result['figures']['rounds']} rounds of {result['figures']['seconds']:g} s, servers alternating"
    return "\n".join(lines) + "\n\n" + run_line(result, extra) + "\n"


def render_udp_generators(results):
    result = results.get("udp-loadtest-vs-udpgen")
    if result is None:
        return missing("Benchmarks/udp-loadtest-vs-udpgen.sh 5 100 1000", "udp-loadtest-vs-udpgen")
    lines = ["| flows | `udpgen` | `loadtest udp --loops 1` | share of `udpgen` | datagrams lost |",
             "| ---: | ---: | ---: | ---: | ---: |"]
    for n, generators in sorted(result["figures"]["flows"].items(), key=lambda item: int(item[0])):
        g, l = generators.get("udpgen"), generators.get("loadtest")
        share = f"{l['rate'] / g['rate'] * 100:.0f}%" if g and l else ""
        lost = sum(sum(x["lost"]) for x in generators.values())
        lines.append(f"| {int(n):,} | {g['rate']:,.0f}/s | {l['rate']:,.0f}/s | {share} | {lost} |")
    extra = f"{result['figures']['rounds']} rounds of {result['figures']['seconds']:g} s, generators alternating"
    return "\n".join(lines) + "\n\n" + run_line(result, extra) + "\n"


def render_tcp_generators(results):
    result = results.get("loadtest-vs-loadgen")
    if result is None:
        return missing("Benchmarks/loadtest-vs-loadgen.sh 15 100 1000", "loadtest-vs-loadgen")
    figures = result["figures"]
    lines = ["| connections | `loadgen` | `loadtest echo --loops 1` | loadtest ÷ loadgen (median of the paired "
             "slices' ratios, and their quartiles) | client CPU µs per round trip: `loadgen` | `loadtest` |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for n, generators in sorted(figures["connections"].items(), key=lambda item: int(item[0])):
        g, l = generators["loadgen"], generators["loadtest"]
        q1, q3 = generators["ratio_quartiles"]
        lines.append(f"| {int(n):,} | {g['rate']:,.0f}/s | {l['rate']:,.0f}/s | {generators['ratio']:.2f} "
                     f"({q1:.2f} to {q3:.2f}) | {g['cpu_us_per_round_trip']:.2f} | {l['cpu_us_per_round_trip']:.2f} |")
    extra = (f"{plural(figures['rounds'], 'round')} of {figures['slices']} turns of {figures['slice_s']:g} s "
             f"for each generator")
    return "\n".join(lines) + "\n\n" + run_line(result, extra) + "\n"


def render_open_loop_cost(results):
    result = results.get("open-loop-cost")
    if result is None:
        return missing("Benchmarks/open-loop-cost.sh", "open-loop-cost")
    figures = result["figures"]
    lines = ["| load | pacing slack | client CPU µs per request: `httpgen` | `loadtest http` | loadtest ÷ httpgen "
             "(median of the rounds' ratios) | p99 µs: `httpgen` | `loadtest http` |",
             "| --- | --- |" + " ---: |" * 5]
    for case in figures["cases"]:
        h, l = case["httpgen"], case["loadtest"]
        load = "closed loop" if case["load"] == "closed" else f"{case['load']}/s"
        slack = "" if case["slack"] == "-" else case["slack"]
        ratio = "" if case["ratio"] is None else f"{case['ratio']:.2f}"
        lines.append(f"| {load} | {slack} | {h['cpu_us_per_request']:.2f} | {l['cpu_us_per_request']:.2f} | {ratio} | "
                     f"{h['p99_us']:,.0f} | {l['p99_us']:,.0f} |")
    extra = (f"{figures['connections']} connections, {plural(figures['rounds'], 'round')} of "
             f"{figures['seconds']:g} s windows, clients alternating")
    return "\n".join(lines) + "\n\n" + run_line(result, extra) + "\n"


REDIS_TESTS = [("ping_inline", "PING (inline)"), ("set", "SET"), ("get", "GET")]


def render_redis_clients(results):
    result = results.get("redis-clients")
    if result is None:
        return missing("Benchmarks/redis-compare.sh", "redis-clients")
    figures = result["figures"]
    size = figures["data_bytes"]
    lines = ["| command | pipeline | client CPU µs per request: `redis-benchmark` | `loadtest tcp` | loadtest ÷ "
             "redis-benchmark | server requests/s: `redis-benchmark` | `loadtest tcp` | loadtest ÷ redis-benchmark "
             "| server CPU µs per request: `redis-benchmark` | `loadtest tcp` | errors |",
             "| --- |" + " ---: |" * 10]
    for test, title in REDIS_TESTS:
        for pipeline, entry in sorted(figures["tests"].get(test, {}).items(), key=lambda item: int(item[0])):
            b, l = entry["redis-benchmark"], entry["loadtest"]
            name = title if test == "ping_inline" else f"{title}, {size:,} B value"
            lines.append(f"| {name} | {pipeline} | {b['client_us']:.2f} | {l['client_us']:.2f} | "
                         f"{entry['client_us_ratio']:.2f} | {b['rate']:,.0f} | {l['rate']:,.0f} | "
                         f"{entry['rate_ratio']:.2f} | {b['server_us']:.2f} | {l['server_us']:.2f} | "
                         f"{b['errors'] + l['errors']} |")
    extra = (f"{figures['connections']} connections, "
             f"{plural(figures['rounds'], 'round')} of {figures['seconds']:g} s windows, clients alternating")
    out = "\n".join(lines) + "\n\n" + run_line(result, extra) + "\n"
    rounds = [(f"{title} / {pipeline}", entry) for test, title in REDIS_TESTS
              for pipeline, entry in sorted(figures["tests"].get(test, {}).items(), key=lambda item: int(item[0]))]
    if figures["rounds"] > 1:
        out += ("\nClient CPU µs per request in every round, in order (the table above gives the medians):\n\n"
                "| command / pipeline | `redis-benchmark` | `loadtest tcp` |\n| --- | --- | --- |\n")
        out += "".join(f"| {name} | " + " | ".join(", ".join(f"{v:.2f}" for v in entry[c]["client_us_rounds"])
                                                      for c in ("redis-benchmark", "loadtest")) + " |\n"
                       for name, entry in rounds)
    return out


# ---------------------------------------------------------------------------------------------------------
# TLS: tls-handshake-cpu.sh, tls-compare.sh and profile/tls-instructions-per-request.sh

TLS_SERVERS = [("ours", "ours (`http-hello`)"), ("nginx", "nginx (1 worker)"),
               ("nio", "swift-nio-ssl (`nio-https-server`)")]
TLS_CASES = {
    "full": ("full handshake + 1 request, 16 `openssl s_time -new` clients", "µs per connection"),
    "resume": ("resumed handshake + 1 request, 16 in parallel (`loadtest http --tls-resume`, `Connection: close`)",
               "µs per connection"),
    "close": ("new connection per request, `wrk -t1 -c16 -H 'Connection: close'` (wrk resumes sessions)",
              "µs per connection"),
    "keepalive": ("HTTPS hello, keep-alive, 100 connections (`wrk -t1 -c100`)", "µs per request"),
    "plain": ("plain HTTP hello, keep-alive, 100 connections (the same without TLS)", "µs per request"),
    "idle": ("idle TLS connection after its handshake", "bytes per connection: RSS (malloc in use)"),
    "idlereq": ("idle TLS keep-alive connection after one request", "bytes per connection: RSS (malloc in use)"),
    "idleplain": ("idle plain TCP connection (the same client without TLS)", "bytes per connection: RSS (malloc in use)"),
}
NOT_MEASURED = "not in this run"


def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def load_warning(result):
    """A sentence for a wall-clock run made on a machine busier than its cores: its microseconds swing."""
    loads = [result["machine"].get("loadavg_at_end"), start_load(result)]
    loads = [float(text.split()[0]) for text in loads if text]
    cores = result["machine"].get("nproc") or 1
    if not loads or max(loads) <= cores:
        return ""
    return (f" The load was high (a load average of up to {max(loads):g} on {cores} cores, from other work): "
            "a round's microseconds swing with it, so compare the servers within the run, and prefer the "
            "[instruction counts](#instructions-per-tls-request-and-handshake).")


def tls_ratio(ours, peer):
    return f"{ours / peer:.2f}" if ours and peer else ""


def render_tls_full(results):
    result = results.get("tls-handshake-cpu")
    if result is None:
        return missing("Benchmarks/tls-handshake-cpu.sh", "tls-handshake-cpu")
    figures = result["figures"]
    servers = figures["servers"]
    ours = (servers.get("ours") or {}).get("cost")
    lines = ["| server | server CPU µs per full handshake (user + system) | ours ÷ this | every round | connections per round |",
             "| --- | ---: | ---: | --- | --- |"]
    for key, title in TLS_SERVERS:
        entry = servers.get(key)
        if entry is None:
            lines.append(f"| {title} | {NOT_MEASURED} | | | |")
            continue
        ratio = tls_ratio(ours, entry["cost"]) if key != "ours" else ""
        lines.append(f"| {title} | {entry['cost']:.1f} ({entry['user']:.1f} + {entry['system']:.1f}) | {ratio} | "
                     + ", ".join(f"{v:.1f}" for v in entry["rounds"]) + " | "
                     + ", ".join(f"{c:,}" for c in entry["connections"]) + " |")
    extra = f"{plural(figures['rounds'], 'round')} of {figures['seconds']:g} s, servers alternating"
    return "\n".join(lines) + "\n\n" + run_line(result, extra) + load_warning(result) + "\n"


def tls_cell(case, entry):
    if entry is None:
        return NOT_MEASURED
    if case.startswith("idle"):
        text = count(entry.get("rss"))
        return text + (f" ({count(entry['heap'])})" if entry.get("heap") is not None else "")
    if entry.get("cost") is None:
        return "–"
    text = f"{entry['cost']:.1f}"
    if entry.get("rate"):
        text += f" · {entry['rate'] / 1000:,.1f}k/s" if entry["rate"] >= 1000 else f" · {entry['rate']:,.0f}/s"
    if entry.get("errors"):
        text += f" ({entry['errors']:,} errors)"
    return text


def tls_value(case, entry):
    return None if entry is None else entry.get("rss" if case.startswith("idle") else "cost")


def render_tls_cases(results, cases, command, driver):
    result = results.get("tls-servers")
    recorded = result["figures"]["cases"] if result else {}
    cases = [c for c in cases if c in recorded]
    if not cases:
        return missing(command, "tls-servers")
    figures = result["figures"]

    def entry(case, key):
        servers = recorded[case]
        return servers.get(key + "-plain") if case in ("plain", "idleplain") else servers.get(key)

    columns = TLS_SERVERS
    header = ["case", "unit"] + [t for _, t in columns] + ["ours ÷ nginx", "ours ÷ swift-nio-ssl"]
    lines = ["| " + " | ".join(header) + " |", "| --- | --- |" + " ---: |" * (len(header) - 2)]
    for case in cases:
        ours = tls_value(case, entry(case, "ours"))
        # The plain cases have no swift-nio-ssl server: their column stays empty.
        cells = ["" if case in ("plain", "idleplain") and k == "nio" else tls_cell(case, entry(case, k))
                 for k, _ in columns]
        title, unit = TLS_CASES[case]
        lines.append("| " + " | ".join([title, unit] + cells + [tls_ratio(ours, tls_value(case, entry(case, "nginx"))),
                                                                tls_ratio(ours, tls_value(case, entry(case, "nio")))]) + " |")
    rounds = figures.get("rounds")
    extra = f"{plural(rounds, 'round')} of {figures.get('duration_s'):g} s windows, servers alternating"
    if any(c.startswith("idle") for c in cases):
        extra += f", {figures.get('idle_connections'):,} idle connections held"
    out = "\n".join(lines) + "\n\n" + run_line(dict(result, driver=driver), extra) + load_warning(result) + "\n"
    if rounds and rounds > 1:
        out += ("\nEvery round, in order (the table above gives the medians, and its ratios are the medians of "
                "the rounds' paired ratios):\n\n| case | " +
                " | ".join(t for _, t in columns) + " |\n| --- |" + " --- |" * len(columns) + "\n")
        for case in cases:
            cells = []
            for key, _ in columns:
                e = entry(case, key)
                values = e["rounds"] if e else []
                cells.append(", ".join("–" if v is None else (f"{v:,.0f}" if case.startswith("idle") else f"{v:.1f}")
                                       for v in values))
            out += "| " + " | ".join([TLS_CASES[case][0]] + cells) + " |\n"
    return out


TLS_DRIVES = [("keepalive", "keep-alive request"), ("full", "full handshake + 1 request"),
              ("resume", "resumed handshake + 1 request (`--tls-resume`)"),
              ("close", "new connection per request (wrk, resumed)")]


def render_tls_instructions(results):
    used = []
    drives = [(d, t) for d, t in TLS_DRIVES if any(f"instructions-tls-{d}-{k}" in results for k, _ in TLS_SERVERS)]
    if not drives:
        return missing("Benchmarks/profile/tls-instructions-per-request.sh ours")
    lines = ["| server | " + " | ".join(t for _, t in drives) + " |", "| --- |" + " ---: |" * len(drives)]
    ours = {d: (results.get(f"instructions-tls-{d}-ours") or {}).get("figures", {}).get("instructions") for d, _ in drives}
    for key, title in TLS_SERVERS:
        cells = []
        for drive, _ in drives:
            result = results.get(f"instructions-tls-{drive}-{key}")
            if result is None:
                cells.append(NOT_MEASURED)
                continue
            used.append(result)
            value = result["figures"]["instructions"]
            ratio = tls_ratio(ours[drive], value) if key != "ours" else ""
            cells.append(count(value) + (f" (ours ÷ this {ratio})" if ratio else ""))
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    if not any(r["figures"]["server"] == "nio" for r in used):
        lines.append("\nswift-nio-ssl is not in these runs: `tls-instructions-per-request.sh nio` measures it once "
                     "`nio-https-server` is built (the Benchmarks package).")
    dates = sorted(when(r) for r in used)
    loads = sorted(float(r["machine"]["loadavg_at_end"].split()[0]) for r in used if r["machine"].get("loadavg_at_end"))
    out = "\n".join(lines) + "\n\n"
    out += (f"Runs: {dates[0]} to {dates[-1]}, each server alone under callgrind (load average at the end "
            f"{loads[0]:g} to {loads[-1]:g}; the counts do not depend on it); every count divides the difference "
            "between a short and a long run by the requests or connections done between them. The commands, from "
            "the repository root:\n\n```sh\n")
    for result in sorted(used, key=lambda r: r["name"]):
        out += result["command"] + "\n"
    out += "```\n"
    for drive, what in (("full", "a full handshake"), ("keepalive", "a keep-alive request")):
        top = (results.get(f"instructions-tls-{drive}-ours") or {}).get("figures", {}).get("top")
        if top:
            out += (f"\nWhere our server's instructions for {what} go (the same run's steady window, inclusive "
                    "cost below the event loop's own frames, as instructions per "
                    f"{'connection' if drive == 'full' else 'request'}; a function's cost includes its callees'):\n\n"
                    "| instructions | share | function |\n| ---: | ---: | --- |\n")
            out += "".join(f"| {row['instructions']:,} | {row['share'] * 100:.1f}% | `{row['function']}` |\n"
                           for row in top if not row["function"].startswith("0x"))
    if "| share |" in out:
        out += "\nFunctions inside libcrypto and libssl that Debian's libraries name by address only are left out.\n"
    return out


def chart_source(results):
    """The run docs/benchmarks-servers.svg is drawn from: the loadgen-driven comparison, or the loadtest one."""
    return next((name for name in ("servers-loadgen", "servers-loadtest") if name in results), None)


def svg_text(results):
    """The chart of the run chart_source() names, shown under that run's table."""
    name = chart_source(results)
    if name is None:
        return None
    result = results[name]
    figures = result["figures"]
    meta = {"rounds": figures.get("rounds"), "date": when(result), "cpu": result["machine"]["cpu"],
            "kernel": result["machine"]["kernel"], "driver": figures.get("driver"),
            "duration_s": figures.get("duration_s")}
    return report.svg(report.summary_from_record(figures), meta)


def render_soak(results):
    result = results.get("soak")
    if result is None:
        return missing("SOAK_MINUTES=60 Benchmarks/soak.sh", "soak")
    f = result["figures"]
    settle = f"{f['settle_s'] / 60:.1f}".removesuffix(".0") + " min"
    lines = [f"| server | RSS from {settle} | RSS at the end | growth | peak RSS | descriptors at every pause "
             "| loop utilisation under load | loop lag p99 (median, max) | exit on SIGTERM |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, s in f["servers"].items():
        lines.append(f"| `{name}` | {s.get('rss_first_kib', 0) / 1024:.1f} MiB | {s.get('rss_last_kib', 0) / 1024:.1f} MiB "
                     f"| {s.get('rss_growth_pct', float('nan')):+.2f}% | {s['peak_rss_kib'] / 1024:.1f} MiB "
                     f"| {s['descriptors']} | {s['utilisation_mean'] * 100:.0f}% "
                     f"| {s['lag_p99_ms_median']:g} ms, {s['lag_p99_ms_max']:g} ms | {s['exit']} |")
    problems = [re.sub(r" \(see [^)]*\)", "", p) for p in f["problems"]]
    problems += [f"`{n}`'s RSS grew 1% or more" for n, s in f["servers"].items() if not s["rss_ok"]]
    verdict = "passed" if f["passed"] else "failed: " + "; ".join(problems)
    extra = (f"{f['minutes']:g} minutes, {f['cycles']} cycles of load and pause, {f['load_runs']:,} load runs "
             f"with {f['load_errors']} errors; the soak {verdict}")
    chart = ("![The soak: RSS, open descriptors, loop utilisation and lag of each server, a sample every 10 s]"
             "(benchmarks-soak.svg)")
    return "\n".join(lines) + "\n\n" + run_line(result, extra) + "\n\n" + chart + "\n"


TLS_IDLE_PROCESSES = [("echo", "`echo-server` with `--tls-cert`"), ("http-hello", "`http-hello` with `--tls-cert`"),
                      ("nginx", "nginx")]


def render_tls_idle_memory(results):
    result = results.get("tls-idle-memory")
    if result is None:
        return missing("Benchmarks/tls-idle-memory.sh", "tls-idle-memory")
    f = result["figures"]
    rows = [("server", title, f["servers"].get(key, {})) for key, title in TLS_IDLE_PROCESSES]
    rows.append(("client", "`loadtest idle --tls`", f.get("client", {})))
    lines = ["| side | process | bytes per connection, buffers released while idle (as built) | "
             "bytes per connection, buffers kept (mode cleared) | kept − released |",
             "| --- | --- | ---: | ---: | ---: |"]
    for side, title, variants in rows:
        released, kept = (variants.get(v, {}).get("bytes") for v in ("released", "kept"))
        difference = count(kept - released) if released is not None and kept is not None else ""
        cells = [count(released) or NOT_MEASURED, count(kept) or NOT_MEASURED, difference]
        lines.append(f"| {side} | {title} | " + " | ".join(cells) + " |")
    extra = f"{f['connections']:,} idle TLS connections held, nginx {f['nginx']}"
    return "\n".join(lines) + "\n\n" + run_line(result, extra) + "\n"


RENDERERS = {
    "machine": render_machine,
    "instructions": render_instructions,
    "servers-loadgen": lambda r: render_servers(r, "servers-loadgen", "Benchmarks/compare.sh --driver loadgen"),
    "servers-loadtest": lambda r: render_servers(r, "servers-loadtest", "Benchmarks/compare.sh"),
    "udp-servers": render_udp_servers,
    "udp-generators": render_udp_generators,
    "tcp-generators": render_tcp_generators,
    "open-loop-cost": render_open_loop_cost,
    "redis-clients": render_redis_clients,
    "tls-full": render_tls_full,
    "tls-resumed": lambda r: render_tls_cases(r, ["resume", "close"], "Benchmarks/tls-compare.sh --only resume",
                                              "loadtest (1 loop; wrk for the wrk row)"),
    "tls-keepalive": lambda r: render_tls_cases(r, ["keepalive", "plain"], "Benchmarks/tls-compare.sh --only keepalive",
                                                "wrk (1 thread)"),
    "tls-idle": lambda r: render_tls_cases(r, ["idle", "idlereq", "idleplain"], "Benchmarks/tls-compare.sh --only idle",
                                           "tls-idle-client.py"),
    "tls-instructions": render_tls_instructions,
    "tls-idle-memory": render_tls_idle_memory,
    "soak": render_soak,
}


def figure_values(value, path):
    """The values at a dotted path inside a result's figures; a `*` takes every key at its level."""
    if not path:
        return [value]
    head, rest = path[0], path[1:]
    if head == "*" and isinstance(value, dict):
        return [v for key in value for v in figure_values(value[key], rest)]
    if isinstance(value, dict) and head in value:
        return figure_values(value[head], rest)
    if isinstance(value, list) and head.isdigit() and int(head) < len(value):
        return figure_values(value[int(head)], rest)
    return []


AGGREGATES = {"min": min, "max": max, "median": statistics.median}


def inline_figure(spec, results, page):
    """The text of one inline figure, `RESULT PATH [AGGREGATE] [FORMAT]` (see the module's doc)."""
    words = spec.split()
    if len(words) < 2:
        raise SystemExit(f"render-docs.py: {page}: an inline figure needs a result and a path: '{spec}'")
    name, path, rest = words[0], words[1], words[2:]
    aggregate = AGGREGATES[rest.pop(0)] if rest and rest[0] in AGGREGATES else None
    spec_format = rest[0] if rest else None
    if name in REFUSED:
        raise SystemExit(f"render-docs.py: {page}: figure '{spec}' comes from a run that is not used: "
                         f"{refusal(name)}")
    if name not in results:
        raise SystemExit(f"render-docs.py: {page}: figure '{spec}': no Benchmarks/results/{name}.json")
    values = [v for v in figure_values(results[name]["figures"], path.split(".")) if isinstance(v, (int, float))]
    if not values or (len(values) > 1 and aggregate is None):
        raise SystemExit(f"render-docs.py: {page}: figure '{spec}' names {len(values)} numbers"
                         + (" (give min, max or median)" if values else ""))
    value = aggregate(values) if aggregate else values[0]
    if spec_format is None:
        spec_format = "," if float(value).is_integer() else ",.2f"
    return format(int(value) if spec_format == "," else value, spec_format)


def render(text, results, page):
    def region(match):
        name = match.group(2)
        if name not in RENDERERS:
            raise SystemExit(f"render-docs.py: {page} has an unknown region '{name}'")
        return match.group(1) + RENDERERS[name](results) + match.group(4)

    def inline(match):
        return match.group(1) + inline_figure(match.group(2), results, page) + match.group(4)
    return INLINE.sub(inline, REGION.sub(region, text))


def main():
    check = "--check" in sys.argv[1:]
    results = load_results()
    stale = []
    for path in finder.pages(ROOT):
        page = os.path.relpath(path, ROOT)
        with open(path) as f:
            current = f.read()
        rendered = render(current, results, page)
        if rendered == current:
            continue
        stale.append(page)
        if check:
            sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), rendered.splitlines(True),
                                                       page, "rendered from Benchmarks/results"))
        else:
            with open(path, "w") as f:
                f.write(rendered)
    # A chart with no usable run is removed, so that no page shows one.
    charts = {SVG: svg_text(results), SOAK_SVG: soak.chart(results["soak"]["figures"]) if "soak" in results else None}
    for path, text in charts.items():
        exists = os.path.exists(path)
        if (text is None and not exists) or (exists and text is not None and open(path).read() == text):
            continue
        stale.append(os.path.relpath(path, ROOT))
        if check:
            continue
        if text is None:
            os.remove(path)
        else:
            with open(path, "w") as f:
                f.write(text)
    if not check:
        print("render-docs.py: rendered " + (", ".join(stale) if stale else "nothing new"))
        return
    unrendered = finder.check(ROOT)
    for line in unrendered:
        print(line, file=sys.stderr)
    if stale:
        print(f"render-docs.py: {', '.join(stale)} out of date with Benchmarks/results; "
              "run `python3 Benchmarks/render-docs.py` and commit the result", file=sys.stderr)
    if stale or unrendered:
        sys.exit(1)
    print("render-docs.py: every page, its charts and the --help texts match Benchmarks/results")


if __name__ == "__main__":
    main()
