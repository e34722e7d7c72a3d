#!/usr/bin/env python3
"""Finds measured figures written by hand: in the pages (README.md, CHANGELOG.md, docs/*.md, the DocC catalogs)
outside what render-docs.py renders, and in the --help texts (loadtest's command-line parser and its modes'
options, the example servers' main.swift and Sources/ExampleSupport).

    python3 Benchmarks/find-figures.py        # list them; exit 1 if there are any
                                              # (render-docs.py --check runs the same check)

A measured figure is a number beside a unit or word of measurement: µs or ns; a decimal number of ms; a
number of instructions; a rate (/s, per second, a second); a decimal ratio (1.2x, 1.4 times); a percentage;
bytes per connection or of RSS; a number right after a measured quantity ("per round trip 3,392", "(were
3,470)"); a before → after pair; a decimal with two places (a ratio such as 0.83). Left alone: the rendered
regions and inline figures (render-docs.py), fenced code blocks (commands and sample output), `code spans`
(flags and their example values) and link targets, and the few lines ALLOWED lists: settings, defaults and
limits that these patterns would otherwise take for measurements. Every check first runs SELF_TEST, the
hand-written figures that this check exists for, and fails if one of them is not found.
"""
import glob
import os
import re
import sys

NUM = r"(?<![\w.,/^])[~≈]?\d[\d,]*(?:\.\d+)?"
DECIMAL = r"(?<![\w.,/^])\d[\d,]*\.\d+(?![\d]|\.\d)"
TWO_PLACES = r"(?<![\w.,/^])\d[\d,]*\.\d{2,}(?![\d]|\.[\d*])"
# Not figures: versions, and thresholds, defaults and examples (a setting is not a measurement).
VERSION = re.compile(r"\b(?:valgrind|Swift|OpenSSL|TLS|HTTP/|nginx/|redis-server|Linux|version|v)\s?$", re.I)
SETTING = re.compile(r"(?:[<>=]|\bdefault\b[^)]*|\be\.g\.[^)]*|\bfor example\b[^)]*)$")
MEASURED = [
    (re.compile(NUM + r"\s?(?:µs|us|ns)\b"), "a time in µs or ns"),
    (re.compile(DECIMAL + r"\s?ms\b"), "a time in ms"),
    (re.compile(r"(?:p50|p90|p99(?:\.9+)?|median|mean|latency|lag)\s+(?:of\s+)?(?:about\s+)?" + NUM + r"\s?ms\b"),
     "a latency"),
    (re.compile(NUM + r"\s?(?:user-space\s+)?instructions?\b"), "instructions"),
    (re.compile(NUM + r"\s?(?:k|M)?(?:\s?(?:req|requests|round trips|datagrams|messages|connections|responses|"
                r"handshakes|wakeups|samples|MiB|MB|KiB))?(?:/s\b|\s(?:per|a) second\b)"), "a rate"),
    (re.compile(DECIMAL + r"\s?(?:x|×)(?![\w])(?!\s*\d)"), "a ratio"),
    (re.compile(DECIMAL + r"\s(?:times)\b"), "a ratio"),
    (re.compile(NUM + r"\s?%"), "a percentage"),
    (re.compile(NUM + r"(?:–\d[\d,]*)?\s?(?:B|bytes|KiB|MiB|kB|MB)\s(?:per\s(?:idle\s)?connection|of\sRSS|RSS)"),
     "memory per connection"),
    (re.compile(r"(?:round trip|connection|request|message|datagram|wakeup)s?\s+(?:about\s+)?"
                r"\d[\d]*(?:,\d{3})+\b"), "a figure after a measured quantity"),
    (re.compile(r"\((?:was|were)\s+" + NUM), "an earlier figure"),
    (re.compile(NUM + r"\s?(?:→|->)\s?" + NUM), "a before → after pair"),
    (re.compile(r"\b(?:fall|falls|fell|rise|rises|rose|grow|grows|grew|drop|drops|dropped|went|goes|go)\s+from\s+"
                + NUM + r"\s+to\s+(?:about\s+)?" + NUM), "a before → after pair"),
    (re.compile(TWO_PLACES), "a two-place decimal"),
]
# A table whose header names one of these measures holds measured figures in its numeric cells.
TABLE_MEASURE = re.compile(r"instructions|µs|\bms\b|/s\b|per second|\bCPU\b|\bRSS\b|latency|\bp50\b|\bp99\b|"
                           r"ratio|÷|utilisation|busy\b|system calls|round trips|requests/s", re.I)
FIGURE_CELL = re.compile(r"^[~≈]?\d[\d,]*(?:\.\d+)?(?:\s?(?:µs|ms|s|%|B|KiB|MiB|x|/s))?"
                         r"(?:\s*(?:and|/|→|,)\s*[~≈]?\d[\d,]*(?:\.\d+)?(?:\s?(?:µs|ms|s|%|B|KiB|MiB))?)*$")


# A whole number of one or two significant digits (50 µs, 10,000/s) is a setting where these kinds are concerned:
# a slack, a rate asked for. A measured time or rate has more digits, or a decimal point.
ROUND_IS_SETTING = {"a time in µs or ns", "a rate"}


def is_round(text):
    """Whether the first number in text is whole with at most two significant digits."""
    number = re.search(r"\d[\d,]*(?:\.\d+)?", text).group(0).replace(",", "")
    return "." not in number and len(number.rstrip("0")) <= 2


# Settings, defaults and limits that the patterns above would take for measurements: (path, text on the line).
ALLOWED = [
    ("docs/architecture.md", "16 to 32 B per connection"),          # two references' worth, by construction
    ("docs/observability.md", "at most 12.5%"),                     # the histogram's bucket width, by design
    ("docs/benchmarks.md", "growth below 1%"),                      # the soak's pass mark
    ("docs/benchmarks.md", "RSS grew less than 1%"),                # the same
    ("docs/loadtest.md", "HdrHistogram's view: 90 %, 99 %, 99.9 %"),  # the percentile axis's labels
    ("docs/loadtest.md", "(100 % when none completed)"),            # what a threshold's metric means
    ("docs/quick-start-load-testing.md", "more than 5 %"),          # the rate-shortfall warning's threshold
    ("docs/loadtest.md", "more than 5 %"),                          # the same
]
# The hand-written figures this check exists for: each must be found.
SELF_TEST = [
    "Instructions per echo round trip 3,392 (were 3,470), per async round trip 4,926 (4,972), per churned "
    "connection 9,719 (9,716).",
    "the echo server spends 3,412 instructions per round trip",
    "| off | 3,467 and 3,463 |\n\n+72 instructions, +2.1%, under callgrind",
    "the C server does 82.3k/s at 100 connections",
    "loadgen drives 8,977/s against it",
    "one loadtest loop is held to at least 90 % of the C reference",
    "the recorded run shows a ratio of 0.83",
    "a 64 B echoed message costs the client about 910 user-space instructions, and its CPU time is 1.22x echo's",
    "`echo-server` holds 397–403 B per idle connection",
    "latency p50 1.14 ms, p99 7.4 ms",
    "user-space instructions per request against redis-server fall from 5,143 to\n3,343 at pipeline 1",
    "| echo-server | unread | 7.2 MiB | 19.6 → 20.7 → 20.7 | 0.21 / 0.33 / 0.81 |",
    "the echo server spends about 3,465 instructions per round trip",
    "| Setting | instructions: `loadtest echo` | `loadtest ws` |\n| --- | ---: | ---: |\n| 64 B | 732 | 927 |",
]


def pages(root):
    """The pages whose figures come from the results: the README, the CHANGELOG, docs/ and the DocC catalogs."""
    found = [os.path.join(root, "README.md"), os.path.join(root, "CHANGELOG.md")]
    found += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    found += sorted(glob.glob(os.path.join(root, "Sources", "*", "*.docc", "**", "*.md"), recursive=True))
    return [path for path in found if os.path.exists(path)]


def help_sources(root):
    """The Swift files that hold --help texts."""
    found = sorted(glob.glob(os.path.join(root, "Sources", "LoadTest", "CommandLineParser*.swift")))
    found += sorted(glob.glob(os.path.join(root, "Sources", "LoadTest", "Modes", "*.swift")))  # each mode's options
    found += sorted(glob.glob(os.path.join(root, "Sources", "*", "main.swift")))
    found += sorted(glob.glob(os.path.join(root, "Sources", "ExampleSupport", "*.swift")))
    return found


def blank(match):
    """A match replaced by as many newlines as it spans, so that line numbers stay."""
    return "\n" * match.group(0).count("\n")


def prose(markdown):
    """The text of a page that a person reads as prose and tables, with everything rendered taken out."""
    text = re.sub(r"<!-- BEGIN generated: [\w-]+ -->.*?<!-- END generated -->", blank, markdown, flags=re.S)
    text = re.sub(r"<!-- fig:.*?<!-- /fig -->", blank, text, flags=re.S)
    text = re.sub(r"^(```|~~~).*?^\1[ \t]*$", blank, text, flags=re.S | re.M)
    text = re.sub(r"<!--.*?-->", blank, text, flags=re.S)
    text = re.sub(r"`(?:[^`\n]|\n(?![ \t]*\n))*`", lambda m: "``" + "\n" * m.group(0).count("\n"), text)
    return re.sub(r"\]\([^)\s]*\)", "]()", text)


def swift_strings(source):
    """The string literals of a Swift file (multi-line ones too), at their lines; the rest blanked."""
    out = []
    for match in re.finditer(r'"""(.*?)"""|"((?:[^"\\\n]|\\.)*)"', source, re.S):
        body = match.group(1) if match.group(1) is not None else match.group(2)
        line = source.count("\n", 0, match.start())
        out.append((line, body))
    text = [""] * (source.count("\n") + 1)
    for line, body in out:
        for i, part in enumerate(body.split("\n")):
            text[line + i] += " " + part
    return "\n".join(text)


def measured_table_cells(lines):
    """(line number, cell) for the numeric cells of tables whose header names a measure: a figure there needs
    no unit beside it to be one."""
    found, measuring = [], False
    for number, line in enumerate(lines, 1):
        if not line.startswith("|"):
            measuring = False
            continue
        if number < len(lines) and re.match(r"\|\s*:?-{3}", lines[number]):
            measuring = bool(TABLE_MEASURE.search(line))
            continue
        if measuring and not re.match(r"\|\s*:?-{3}", line):
            found += [(number, cell.strip()) for cell in line.strip("|").split("|") if FIGURE_CELL.match(cell.strip())]
    return found


def scan(text, path="", allowed=()):
    """(line number, figure, what it is, the line) for each hand-written measured figure in text."""
    found = []
    lines = text.split("\n")
    cells = {}
    for number, cell in measured_table_cells(lines):
        cells.setdefault(number, []).append(cell)
    for number, line in enumerate(lines, 1):
        if any(path == page and snippet in line for page, snippet in allowed):
            continue
        found += [(number, cell, "a figure in a table of measurements", line.strip()) for cell in cells.get(number, [])]
        # The next line too, for a figure that a line break splits; only matches that start on this line count.
        joined = line + " " + (lines[number] if number < len(lines) else "")
        taken = []
        for pattern, what in MEASURED:
            for match in pattern.finditer(joined):
                if match.start() >= len(line):
                    continue
                before = joined[:match.start()]
                if (match.group(0)[0].isdigit() and VERSION.search(before)) or SETTING.search(before[before.rfind("(") + 1:] if "(" in before else before[-12:]) \
                        or any(a <= match.start() < b for a, b in taken):
                    continue
                if what in ROUND_IS_SETTING and is_round(match.group(0)):
                    continue
                taken.append(match.span())
                found.append((number, match.group(0), what, line.strip()))
    return found


def self_test():
    """The SELF_TEST sentences each hold a figure the check finds."""
    return [case for case in SELF_TEST if not scan(prose(case))]


def check(root):
    """One line per hand-written measured figure (and per SELF_TEST case the check misses)."""
    problems = [f"find-figures.py: the check misses a known hand-written figure: {case!r}" for case in self_test()]
    for path in pages(root):
        page = os.path.relpath(path, root)
        for number, figure, what, line in scan(prose(open(path).read()), page, ALLOWED):
            problems.append(f"{page}:{number}: {what} written by hand, {figure!r}: render it from "
                            f"Benchmarks/results (<!-- fig:... -->), link to the table, or drop it: {line[:120]}")
    for path in help_sources(root):
        page = os.path.relpath(path, root)
        for number, figure, what, line in scan(swift_strings(open(path).read()), page, ALLOWED):
            problems.append(f"{page}:{number}: {what} in a --help text, {figure!r}: a measured figure does not "
                            f"belong in --help (link to docs/benchmarks.md): {line[:120]}")
    return problems


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    print("\n".join(problems) if problems else "find-figures.py: no hand-written measured figure")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
