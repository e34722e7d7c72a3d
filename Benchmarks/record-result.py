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

No run measured on a busy machine is kept: a run whose 1-minute load average, at its start or at its end, is
above the machine's core count (os.cpu_count(), what `nproc` says outside taskset) is refused, with the loads,
the cores and the busiest processes at the refusal (what made the load), and the script exits 1. Only
--load-independent runs are exempt. `--self-test` checks this guard and records nothing.
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


def busiest_processes(count=5):
    """The processes using the most CPU now, one per line (ps), for a refusal's message."""
    try:
        out = subprocess.run(["ps", "-eo", "pcpu,pid,etime,args", "--sort=-pcpu", "--no-headers"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return [line.strip()[:110] for line in out.splitlines()[:count]]


class LoadTooHigh(SystemExit):
    """A run refused for the machine's load; as a SystemExit its message goes to standard error and the
    recording script exits 1, so a busy machine's run never reaches Benchmarks/results."""


def load_refusal(loadavg_start, loadavg_end, cores):
    """Why a wall-clock run at these load averages ("1min 5min 15min" texts, or None when not known) may
    not be kept on a machine of CORES cores, or None when it may. The 1-minute figure is the one judged: it
    is the work that competed with the run around its start and end."""
    high = []
    for when, text in (("start", loadavg_start), ("end", loadavg_end)):
        try:
            one = float((text or "").split()[0])
        except (IndexError, ValueError):
            continue
        if one > cores:
            high.append(f"{one:g} at its {when}")
    if not high:
        return None
    return (f"record-result.py: not recorded: the 1-minute load average was {' and '.join(high)}, above the "
            f"machine's {cores} cores, so other work competed with the run and its figures measure the machine, "
            f"not the code (load averages at start: {loadavg_start or 'not known'}; at end: "
            f"{loadavg_end or 'not known'}). Run it again when `uptime` shows a 1-minute load below {cores}.")


def check_load(loadavg_start, loadavg_end, cores):
    """Raises LoadTooHigh, naming the busiest processes (what made the load), when load_refusal refuses."""
    refusal = load_refusal(loadavg_start, loadavg_end, cores)
    if refusal:
        busiest = busiest_processes()
        if busiest:
            refusal += "\nThe busiest processes now (ps: %CPU PID ELAPSED COMMAND):\n  " + "\n  ".join(busiest)
        raise LoadTooHigh(refusal)


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
    nothing and returns a sentence that says how to ask. Raises LoadTooHigh, writing nothing, for a wall-clock
    run on a machine busier than its cores (load_refusal)."""
    if not asked():
        return f"nothing (BENCH_RECORD=1 records this run as Benchmarks/results/{name}.json)"
    where = machine(loadavg_start)
    if not load_independent:
        check_load(where["loadavg_at_start"], where["loadavg_at_end"], where["nproc"] or 1)
    directory = os.environ.get("RESULTS_DIR") or os.path.join(HERE, "results")
    os.makedirs(directory, exist_ok=True)
    result = {
        "name": name,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "started": started,
        "commit": git("rev-parse", "HEAD"),
        "sources_modified": bool(git("status", "--porcelain", "--", "Sources", "Package.swift")),
        "machine": {k: v for k, v in where.items() if v is not None},
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


def self_test():
    """Checks the load guard without touching Benchmarks/results: load_refusal's judgement, and that record()
    writes nothing for a refused run and writes an accepted or load-independent one (into a scratch
    RESULTS_DIR, with the machine's load average replaced by the test's)."""
    import tempfile
    assert load_refusal("1.50 1.00 0.50", "2.00 1.00 0.50", 2) is None, "a load equal to the cores is kept"
    assert load_refusal(None, None, 2) is None, "no known load refuses nothing"
    assert "2.01 at its start" in load_refusal("2.01 0.1 0.1", "0.5 0.1 0.1", 2)
    assert "15 at its end" in load_refusal(None, "15.00 11.7 12.9", 2)
    both = load_refusal("3 1 1", "9 1 1", 2)
    assert "3 at its start and 9 at its end" in both and "below 2" in both, both
    assert load_refusal("3.5 20 20", "3.5 20 20", 4) is None, "only the 1-minute figure is judged"
    global loadavg
    real = loadavg
    saved = {k: os.environ.get(k) for k in ("RESULTS_DIR", "BENCH_LOADAVG_START", "BENCH_RECORD")}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            os.environ["RESULTS_DIR"] = scratch
            os.environ.pop("BENCH_LOADAVG_START", None)
            cores = os.cpu_count() or 1
            busy, quiet = f"{cores + 1}.00 1.00 1.00", f"{cores / 2:.2f} 1.00 1.00"
            for when, start, end in (("start", busy, quiet), ("end", quiet, busy)):
                loadavg = lambda: end  # noqa: E731 (the load at the run's end, as record() reads it)
                try:
                    record(f"t-busy-{when}", "cmd", {"x": 1}, loadavg_start=start)
                    raise AssertionError(f"a run above the cores at its {when} was recorded")
                except LoadTooHigh as refused:
                    assert f"at its {when}" in str(refused.code), refused.code
            assert os.listdir(scratch) == [], os.listdir(scratch)
            path = record("t-counts", "cmd", {"x": 1}, loadavg_start=busy, load_independent=True)
            assert os.path.basename(path) == "t-counts.json", path
            loadavg = lambda: quiet
            path = record("t-quiet", "cmd", {"x": 1}, loadavg_start=quiet)
            kept = json.load(open(path))["machine"]
            assert kept["loadavg_at_start"] == quiet and kept["loadavg_at_end"] == quiet, kept
    finally:
        loadavg = real
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    print("record-result.py self-test: ok (a run above the cores at its start or end is refused and not written)")


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
    import sys
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    else:
        main()
