#!/usr/bin/env python3
"""The table and chart of a Benchmarks/compare.sh run.

    python3 Benchmarks/compare-report.py RESULTS_DIR [--svg FILE] [--record NAME]

Reads every per-run JSON in RESULTS_DIR (loadtest --json output or, with --driver loadgen, loadgen's RESULT
line as the same fields, tagged by compare.sh, and the idle-memory samples), takes the median over rounds of
each (scenario, server), and prints one Markdown table (server CPU µs per operation, the primary figure, and
operations per second), the project's targets, and a per-run detail table (RESULTS_DIR/details.md). Writes
an SVG bar chart of server µs per operation per server per scenario. With --record NAME, also records the
medians and every round's figure as Benchmarks/results/NAME.json (record-result.py), which
docs/benchmarks.md and docs/benchmarks-servers.svg are rendered from (render-docs.py).
"""
import glob
import importlib.util
import json
import os
import statistics
import sys
from xml.sax.saxutils import escape

SCENARIOS = [
    ("e64_1", "64 B ping-pong, 1 connection"),
    ("e64_100", "64 B ping-pong, 100 connections"),
    ("e64_1000", "64 B ping-pong, 1,000 connections"),
    ("e64_5000", "64 B ping-pong, 5,000 connections"),
    ("e16k", "16 KiB ping-pong, 100 connections"),
    ("stream", "stream, 10 connections"),
    ("connect", "connect churn, 16 in parallel"),
    ("idle", "idle memory, 10,000 connections"),
    ("http", "HTTP hello, 100 connections"),
]
TITLES = dict(SCENARIOS)

# Table columns: (column title, server in echo scenarios, server in the http scenario)
COLUMNS = [
    ("C reference", "c", "c-http"),
    ("ours (delegate)", "ours", "ours-http"),
    ("ours (async)", "ours-async", None),
    ("SwiftNIO", "nio", "nio-http"),
    ("NIOAsyncChannel", "nio-async", None),
    ("nginx (1 worker)", None, "nginx"),
]
LABELS = {
    "c": "C echo_server", "c-http": "C http_server",
    "ours": "echo-server", "ours-http": "http-hello", "ours-async": "async-echo-server",
    "nio": "SwiftNIO echo", "nio-http": "SwiftNIO NIOHTTP1", "nio-async": "NIOAsyncChannel echo",
    "nginx": "nginx (1 worker)",
}
COLORS = {
    "c": "#7f7f7f", "c-http": "#7f7f7f",
    "ours": "#1f77b4", "ours-http": "#1f77b4", "ours-async": "#6baed6",
    "nio": "#ff7f0e", "nio-http": "#ff7f0e", "nio-async": "#fdae6b",
    "nginx": "#2ca02c",
}
MIB = 1024 * 1024


def load(directory):
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        if path.endswith(".loadtest.json") or os.path.basename(path) == "meta.json":
            continue
        try:
            data = json.load(open(path))
        except (OSError, ValueError):
            continue
        if "compare" in data:
            data["_file"] = os.path.basename(path)
            runs.append(data)
    return runs


def figures(run):
    """(server cost per operation, operations per second, unit of the cost, unit of the rate) of one run."""
    scenario = run["compare"]["scenario"]
    if scenario == "idle":
        return run.get("bytes_per_connection"), None, "B/conn", None
    cpu = run.get("server_cpu_s")
    if scenario == "stream":
        mib = run.get("bytes", 0) / MIB
        cost = cpu * 1e6 / mib if cpu is not None and mib > 0 else None
        return cost, run.get("mib_per_second"), "µs/MiB", "MiB/s"
    cost = run.get("server_us_per_request")
    if cpu is None or not run.get("requests"):
        cost = None
    unit = "µs/conn" if scenario == "connect" else "µs/op"
    rate = "conn/s" if scenario == "connect" else "op/s"
    return cost, run.get("requests_per_second"), unit, rate


def driver_text(meta):
    """What drove the servers: loadtest (one loop) or the C loadgen (compare.sh --driver loadgen)."""
    return "the C loadgen" if meta.get("driver") == "loadgen" else "loadtest (1 loop)"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(runs):
    grouped = {}
    for run in runs:
        key = (run["compare"]["scenario"], run["compare"]["server"])
        grouped.setdefault(key, []).append(run)
    summary = {}
    for key, group in grouped.items():
        costs, rates, errors = [], [], 0
        unit = rate_unit = None
        for run in group:
            cost, rate, unit, rate_unit = figures(run)
            costs.append(cost)
            rates.append(rate)
            errors += (run.get("errors") or {}).get("total", 0)
        summary[key] = {
            "cost": median(costs), "rate": median(rates), "unit": unit, "rate_unit": rate_unit,
            "costs": [c for c in costs if c is not None], "n": len(group), "errors": errors,
        }
    return summary


def fmt_cost(value, unit):
    if value is None:
        return "–"
    if unit == "B/conn":
        return f"{value:,.0f} B"
    if value >= 100:
        return f"{value:,.0f} {unit.split('/')[0]}"
    return f"{value:.2f} {unit.split('/')[0]}"


def fmt_rate(value, unit):
    if value is None:
        return ""
    if unit == "MiB/s":
        return f"{value:,.0f} MiB/s"
    if value >= 10000:
        return f"{value / 1000:,.0f}k/s"
    return f"{value:,.0f}/s"


def cell(entry):
    if entry is None:
        return ""
    text = fmt_cost(entry["cost"], entry["unit"])
    rate = fmt_rate(entry["rate"], entry["rate_unit"])
    if rate:
        text += " · " + rate
    if entry["errors"]:
        text += f" ({entry['errors']} errors)"
    return text


def ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def table(summary, meta):
    scenarios = [s for s, _ in SCENARIOS if any(k[0] == s for k in summary)]
    used = [c for c in COLUMNS if any((s, c[2] if s == "http" else c[1]) in summary for s in scenarios)]
    lines = []
    header = ["scenario", "unit"] + [c[0] for c in used] + ["ours vs C", "ours vs SwiftNIO"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join([" --- "] * len(header)) + "|")
    for scenario in scenarios:
        row = [TITLES[scenario]]
        unit = None
        for column in used:
            server = column[2] if scenario == "http" else column[1]
            entry = summary.get((scenario, server)) if server else None
            if entry and unit is None:
                unit = entry["unit"] + (" · " + entry["rate_unit"] if entry["rate_unit"] else "")
            row.append(cell(entry))
        row.insert(1, unit or "")
        ours = summary.get((scenario, "ours-http" if scenario == "http" else "ours"))
        c = summary.get((scenario, "c-http" if scenario == "http" else "c"))
        nio = summary.get((scenario, "nio-http" if scenario == "http" else "nio"))
        vs_c = ratio(c and c["cost"], ours and ours["cost"])
        vs_nio = ratio(nio and nio["cost"], ours and ours["cost"])
        if scenario == "idle":
            row.append(f"{ours['cost'] - c['cost']:+,.0f} B" if ours and c and ours["cost"] is not None and c["cost"] is not None else "")
        else:
            row.append(f"{vs_c * 100:.0f}% of C's efficiency" if vs_c else "")
        row.append(f"{vs_nio:.2f}x" if vs_nio else "")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def checks(summary):
    """The project's targets, from the medians."""
    out = []

    def cost(scenario, server):
        entry = summary.get((scenario, server))
        return entry["cost"] if entry else None

    def rate(scenario, server):
        entry = summary.get((scenario, server))
        return entry["rate"] if entry else None

    def verdict(ok):
        return "MET" if ok else "MISSED"

    for scenario in ("e64_100", "e64_1000"):
        ours, c, nio = cost(scenario, "ours"), cost(scenario, "c"), cost(scenario, "nio")
        if ours and c:
            eff = c / ours
            out.append(f"- {TITLES[scenario]}: echo-server at {eff * 100:.0f}% of the C reference's efficiency "
                       f"({ours:.2f} vs {c:.2f} µs/op; target >= 90%): {verdict(eff >= 0.9)}")
        if ours and nio:
            speed = nio / ours
            out.append(f"- {TITLES[scenario]}: echo-server {speed:.2f}x SwiftNIO's efficiency "
                       f"({ours:.2f} vs {nio:.2f} µs/op; target >= 1.3x): {verdict(speed >= 1.3)}")
    for scenario in ("e16k", "stream"):
        ours, c = cost(scenario, "ours"), cost(scenario, "c")
        if ours and c:
            eff = c / ours
            unit = summary[(scenario, "ours")]["unit"]
            out.append(f"- {TITLES[scenario]}: echo-server at {eff * 100:.0f}% of the C reference's efficiency "
                       f"({ours:.2f} vs {c:.2f} {unit}; target >= 95%): {verdict(eff >= 0.95)}")
    ours = cost("idle", "ours")
    if ours is not None:
        out.append(f"- idle: echo-server {ours:,.0f} B per idle connection (target < 1,024): {verdict(ours < 1024)}")
    ours, nginx = cost("http", "ours-http"), cost("http", "nginx")
    if ours and nginx:
        out.append(f"- HTTP: http-hello {ours:.2f} µs/request vs nginx {nginx:.2f} (target: no more): {verdict(ours <= nginx)}")
    delegate, asynchronous, nio_async = cost("e64_100", "ours"), cost("e64_100", "ours-async"), cost("e64_100", "nio-async")
    if delegate and asynchronous:
        out.append(f"- async echo at 100 connections: {asynchronous:.2f} µs/op vs delegate {delegate:.2f} "
                   f"({(asynchronous / delegate - 1) * 100:+.0f}% CPU per op; target within 15%): "
                   f"{verdict(asynchronous <= delegate * 1.15)}")
    rd, ra = rate("e64_100", "ours"), rate("e64_100", "ours-async")
    if rd and ra:
        out.append(f"- async echo at 100 connections, round trips/s: {ra:,.0f} vs delegate {rd:,.0f} "
                   f"({(ra / rd - 1) * 100:+.0f}%; target within 15%): {verdict(ra >= rd * 0.85)}")
    if asynchronous and nio_async:
        out.append(f"- async echo vs NIOAsyncChannel at 100 connections: {asynchronous:.2f} vs {nio_async:.2f} µs/op "
                   f"({nio_async / asynchronous:.2f}x), round trips/s {ra or 0:,.0f} vs {rate('e64_100', 'nio-async') or 0:,.0f}: "
                   f"{verdict(asynchronous < nio_async)}")
    out.extend(ratio_targets(cost))
    return "\n".join(out)


def ratio_targets(cost):
    """Ratios to the C reference and to the delegate server, and idle bytes."""
    out = []
    for scenario in ("e64_100", "e64_1000", "e64_5000", "e16k", "connect"):
        c = cost(scenario, "c")
        for server, name in (("ours", "echo-server"), ("ours-async", "async-echo-server")):
            ours = cost(scenario, server)
            if ours and c and (server == "ours" or scenario == "connect"):
                out.append(f"- {TITLES[scenario]}: {name} {ours / c:.2f}x the C reference's CPU per op "
                           f"({ours:.2f} vs {c:.2f}; target <= 1.10x): {'MET' if ours <= c * 1.10 else 'MISSED'}")
    for scenario in ("e64_1000", "e64_5000"):
        delegate, asynchronous = cost(scenario, "ours"), cost(scenario, "ours-async")
        if delegate and asynchronous:
            out.append(f"- {TITLES[scenario]}: async-echo-server {asynchronous / delegate:.2f}x echo-server's CPU "
                       f"per op ({asynchronous:.2f} vs {delegate:.2f}; target <= 1.15x): "
                       f"{'MET' if asynchronous <= delegate * 1.15 else 'MISSED'}")
    for server, name, limit in (("ours", "echo-server", 500), ("ours-async", "async-echo-server", 2048)):
        idle = cost("idle", server)
        if idle is not None:
            out.append(f"- idle: {name} {idle:,.0f} B per idle connection (target <= {limit:,}): "
                       f"{'MET' if idle <= limit else 'MISSED'}")
    return out


def details(runs):
    lines = ["| scenario | server | round | cost | rate | p99.9 latency | errors | load average | file |",
             "|---|---|---|---|---|---|---|---|---|"]
    order = {s: i for i, (s, _) in enumerate(SCENARIOS)}
    for run in sorted(runs, key=lambda r: (order.get(r["compare"]["scenario"], 99), r["compare"]["server"], r["compare"]["round"])):
        cost, rate, unit, rate_unit = figures(run)
        p999 = (run.get("latency_us") or {}).get("p99_9")
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            run["compare"]["scenario"], run["compare"]["server"], run["compare"]["round"],
            fmt_cost(cost, unit), fmt_rate(rate, rate_unit),
            "" if p999 is None else (f"{p999 / 1000:,.1f} ms" if p999 >= 1000 else f"{p999:,.0f} µs"),
            (run.get("errors") or {}).get("total", 0),
            run["compare"].get("loadavg", "").split(" ")[0], run["_file"]))
    return "\n".join(lines)


def record(summary, meta, name):
    """Records the run's medians as Benchmarks/results/NAME.json; returns the path."""
    spec = importlib.util.spec_from_file_location("record_result", os.path.join(os.path.dirname(os.path.abspath(__file__)), "record-result.py"))
    recorder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorder)
    scenarios = {}
    for (scenario, server), entry in summary.items():
        scenarios.setdefault(scenario, {})[server] = {
            "cost": entry["cost"], "unit": entry["unit"], "rate": entry["rate"], "rate_unit": entry["rate_unit"],
            "rounds": entry["costs"], "errors": entry["errors"]}
    figures = {key: meta.get(key) for key in ("driver", "duration_s", "warmup_s", "rounds", "slice_s", "swift",
                                              "nginx", "loadavg_start")}
    figures["scenarios"] = scenarios
    return recorder.record(name, meta.get("command", "Benchmarks/compare.sh"), figures,
                           driver="the C loadgen" if meta.get("driver") == "loadgen" else "loadtest (1 loop)",
                           started=meta.get("date"))


def summary_from_record(figures):
    """The summary `record` stored, keyed by (scenario, server) again (for render-docs.py)."""
    summary = {}
    for scenario, servers in figures["scenarios"].items():
        for server, entry in servers.items():
            summary[(scenario, server)] = dict(entry, costs=entry["rounds"])
    return summary


def svg_title(summary):
    """What the chart's bars measure: server CPU per operation, and idle memory when the run has that row."""
    units = {entry["unit"] for entry in summary.values()}
    cpu = "Server CPU per operation" if any(u.startswith("µs") for u in units) else ""
    memory = "bytes of RSS per idle connection" if "B/conn" in units else ""
    return " and ".join(t for t in (cpu, memory) if t) or "Server cost per operation"


def svg(summary, meta):
    scenarios = [s for s, _ in SCENARIOS if any(k[0] == s for k in summary)]
    columns, panel_w, bar_h, gap, label_w = 3, 420, 20, 6, 150
    panels = []
    for scenario in scenarios:
        servers = []
        for column in COLUMNS:
            server = column[2] if scenario == "http" else column[1]
            if server and (scenario, server) in summary and summary[(scenario, server)]["cost"] is not None:
                servers.append(server)
        panels.append((scenario, servers))
    max_bars = max((len(s) for _, s in panels), default=1)
    panel_h = 46 + max_bars * (bar_h + gap)
    rows = (len(panels) + columns - 1) // columns
    width = columns * panel_w + 20
    top = 70
    height = top + rows * (panel_h + 14) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'font-family="Helvetica, Arial, sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="10" y="22" font-size="16" font-weight="bold">{escape(svg_title(summary))}, one loop on one core '
           f'(medians over the rounds; shorter is better)</text>',
           f'<text x="10" y="42" fill="#555">{escape(meta.get("date", ""))} · {escape(meta.get("cpu", ""))} · '
           f'{escape(meta.get("kernel", ""))} · server on core 0, {escape(driver_text(meta))} on core 1, '
           f'{meta.get("duration_s", "?")} s windows</text>']
    # Legend
    x = 10
    present = {server for _, servers in panels for server in servers}
    present |= {server[:-5] for server in present if server.endswith("-http")}
    for key in ("c", "ours", "ours-async", "nio", "nio-async", "nginx"):
        if key not in present:
            continue
        name = {"c": "C reference", "ours": "ours (delegate)", "ours-async": "ours (async)", "nio": "SwiftNIO",
                "nio-async": "NIOAsyncChannel", "nginx": "nginx"}[key]
        out.append(f'<rect x="{x}" y="52" width="12" height="12" fill="{COLORS[key]}"/>')
        out.append(f'<text x="{x + 16}" y="62">{escape(name)}</text>')
        x += 30 + 7 * len(name)
    for index, (scenario, servers) in enumerate(panels):
        px = 10 + (index % columns) * panel_w
        py = top + (index // columns) * (panel_h + 14)
        unit = summary[(scenario, servers[0])]["unit"] if servers else ""
        out.append(f'<rect x="{px}" y="{py}" width="{panel_w - 10}" height="{panel_h}" fill="#fafafa" stroke="#ddd"/>')
        out.append(f'<text x="{px + 8}" y="{py + 18}" font-weight="bold">{escape(TITLES[scenario])}</text>')
        out.append(f'<text x="{px + panel_w - 18}" y="{py + 18}" text-anchor="end" fill="#555">{escape(unit)}</text>')
        largest = max(summary[(scenario, s)]["cost"] for s in servers) if servers else 1
        scale = (panel_w - label_w - 80) / largest if largest else 0
        for i, server in enumerate(servers):
            entry = summary[(scenario, server)]
            by = py + 30 + i * (bar_h + gap)
            w = max(1.0, entry["cost"] * scale)
            out.append(f'<text x="{px + label_w - 6}" y="{by + bar_h - 6}" text-anchor="end">{escape(LABELS[server])}</text>')
            out.append(f'<rect x="{px + label_w}" y="{by}" width="{w:.1f}" height="{bar_h}" fill="{COLORS[server]}"/>')
            out.append(f'<text x="{px + label_w + w + 4:.1f}" y="{by + bar_h - 6}">{escape(fmt_cost(entry["cost"], entry["unit"]))}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if args else 2)
    directory = args[0]
    svg_path = os.path.join(directory, "servers.svg")
    if "--svg" in args:
        svg_path = args[args.index("--svg") + 1]
    try:
        meta = json.load(open(os.path.join(directory, "meta.json")))
    except (OSError, ValueError):
        meta = {}
    runs = load(directory)
    if not runs:
        print(f"no results in {directory}", file=sys.stderr)
        sys.exit(1)
    summary = summarize(runs)
    print()
    print(f"Servers on one loop, pinned to core 0; {driver_text(meta)} on core 1. Median of {meta.get('rounds', '?')} "
          f"round(s), {meta.get('duration_s', '?')} s windows. Cells: server CPU per operation · operations per second.")
    print()
    print(table(summary, meta))
    print()
    print("Targets:")
    print(checks(summary))
    with open(os.path.join(directory, "details.md"), "w") as f:
        f.write(details(runs) + "\n")
    with open(svg_path, "w") as f:
        f.write(svg(summary, meta))
    if "--record" in args:
        print("recorded", record(summary, meta, args[args.index("--record") + 1]))
    print()
    print(f"Per-run figures: {os.path.join(directory, 'details.md')}; chart: {svg_path}")


if __name__ == "__main__":
    main()
