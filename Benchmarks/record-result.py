#!/usr/bin/env python3
"""Records one benchmark run as Benchmarks/results/NAME.json: the figures, and what they came from.

    python3 Benchmarks/record-result.py NAME --command "Benchmarks/..." [--driver TEXT] [--note TEXT] \\
        [--figure KEY=VALUE ...] [--figures-json FILE]

The benchmark scripts call it when a run ends; docs/benchmarks.md is rendered from these files
(Benchmarks/render-docs.py), so a figure in the docs is always one recorded run's. Next to the figures it
stores the date (UTC), the commit and whether Sources/ had uncommitted changes, the machine (nproc, CPU model,
kernel, the load average when the run ended) and the command. VALUEs that parse as numbers are stored as
numbers. RESULTS_DIR (default: Benchmarks/results) changes where the file goes; BENCH_NOTE, when set, is
stored as the run's note (what a reader of its table must know, such as a peer left out and why) unless
--note gives one.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def git(*args):
    try:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine():
    try:
        loadavg = " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        loadavg = None
    return {"nproc": os.cpu_count(), "cpu": cpu_model(), "kernel": f"{platform.system()} {platform.release()}",
            "loadavg_at_end": loadavg}


def number(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def record(name, command, figures, driver=None, note=None, started=None):
    """Writes RESULTS_DIR/NAME.json and returns its path."""
    directory = os.environ.get("RESULTS_DIR") or os.path.join(HERE, "results")
    os.makedirs(directory, exist_ok=True)
    result = {
        "name": name,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "started": started,
        "commit": git("rev-parse", "HEAD"),
        "sources_modified": bool(git("status", "--porcelain", "--", "Sources", "Package.swift")),
        "machine": machine(),
        "command": command,
        "driver": driver,
        "note": note or os.environ.get("BENCH_NOTE") or None,
        "figures": figures,
    }
    result = {k: v for k, v in result.items() if v is not None}
    path = os.path.join(directory, name + ".json")
    with open(path, "w") as f:
        json.dump(result, f, indent=2, sort_keys=False)
        f.write("\n")
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name")
    parser.add_argument("--command", required=True)
    parser.add_argument("--driver")
    parser.add_argument("--note")
    parser.add_argument("--started", help="when the run started (UTC, ISO 8601)")
    parser.add_argument("--figure", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--figures-json", metavar="FILE")
    args = parser.parse_args()
    figures = json.load(open(args.figures_json)) if args.figures_json else {}
    for item in args.figure:
        key, _, value = item.partition("=")
        figures[key] = number(value)
    print("recorded", record(args.name, args.command, figures, args.driver, args.note, args.started))


if __name__ == "__main__":
    main()
