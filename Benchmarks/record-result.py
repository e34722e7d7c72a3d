#!/usr/bin/env python3
"""Records one benchmark run as Benchmarks/results/NAME.json: the figures, and what they came from.

    python3 Benchmarks/record-result.py NAME --command "Benchmarks/..." [--driver TEXT] [--note TEXT] \\
        [--figure KEY=VALUE ...] [--figures-json FILE]

The benchmark scripts call it when a run ends, and it writes only when asked: with BENCH_RECORD=1 in the
environment (or RESULTS_DIR set), so that measuring leaves a clone clean. The docs are rendered from these
files (Benchmarks/render-docs.py), so a figure in the docs is always one recorded run's. Next to the figures it
stores the date (UTC), the commit and whether Sources/ had uncommitted changes, the machine (nproc, CPU model,
kernel, the load average when the run started and when it ended) and the command. The load at the start is
BENCH_LOADAVG_START (bench-lib.sh sets it when a script sources it), else --loadavg-start; without either it
is not recorded, and render-docs.py then judges the run by its load at the end. --load-independent marks
figures that the machine's load does not change (callgrind's instruction counts), which render-docs.py uses
whatever the load was. VALUEs that parse as numbers are stored as numbers. RESULTS_DIR (default:
Benchmarks/results) changes where the file goes; BENCH_NOTE, when set, is stored as the run's note (what a
reader of its table must know, such as a peer left out and why) unless --note gives one.
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


def loadavg():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg gives them."""
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return None


def machine(loadavg_start=None):
    return {"nproc": os.cpu_count(), "cpu": cpu_model(), "kernel": f"{platform.system()} {platform.release()}",
            "loadavg_at_start": loadavg_start or os.environ.get("BENCH_LOADAVG_START") or None,
            "loadavg_at_end": loadavg()}


def asked():
    """Whether this run is to be written: BENCH_RECORD=1, or a RESULTS_DIR of the caller's choosing."""
    return os.environ.get("BENCH_RECORD") == "1" or bool(os.environ.get("RESULTS_DIR"))


def number(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def record(name, command, figures, driver=None, note=None, started=None, load_independent=False,
           loadavg_start=None):
    """Writes RESULTS_DIR/NAME.json and returns its path; when recording was not asked for (asked()), writes
    nothing and returns a sentence that says how to ask."""
    if not asked():
        return f"nothing (BENCH_RECORD=1 records this run as Benchmarks/results/{name}.json)"
    directory = os.environ.get("RESULTS_DIR") or os.path.join(HERE, "results")
    os.makedirs(directory, exist_ok=True)
    result = {
        "name": name,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "started": started,
        "commit": git("rev-parse", "HEAD"),
        "sources_modified": bool(git("status", "--porcelain", "--", "Sources", "Package.swift")),
        "machine": {k: v for k, v in machine(loadavg_start).items() if v is not None},
        "command": command,
        "driver": driver,
        "load_independent": load_independent or None,
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
    parser.add_argument("--loadavg-start", help="the load averages when the run started (/proc/loadavg's first three)")
    parser.add_argument("--load-independent", action="store_true",
                        help="the figures do not depend on the machine's load (instruction counts)")
    parser.add_argument("--figure", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--figures-json", metavar="FILE")
    args = parser.parse_args()
    figures = json.load(open(args.figures_json)) if args.figures_json else {}
    for item in args.figure:
        key, _, value = item.partition("=")
        figures[key] = number(value)
    print("recorded", record(args.name, args.command, figures, args.driver, args.note, args.started,
                                 args.load_independent, args.loadavg_start))


if __name__ == "__main__":
    main()
