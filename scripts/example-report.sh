#!/bin/sh
# Regenerates docs/loadtest.md's example report from a real run: builds loadtest and echo-server in release
# mode, starts the server on a free loopback port, runs loadtest against it, and writes
#   docs/loadtest-example.svg   the --svg chart
#   docs/loadtest-example.json  the --json report
# and the text report, with the command, version, date and machine, between docs/loadtest.md's
# `<!-- BEGIN example-report ... -->` and `<!-- END example-report -->` lines. Nothing in it is typed by hand.
#
#   scripts/example-report.sh            # from the repository's root or anywhere in it
set -eu
cd "$(dirname "$0")/.."
swift build -c release --product loadtest >/dev/null
swift build -c release --product echo-server >/dev/null
bin=.build/release
out=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$out"' EXIT

"$bin/echo-server" --port 0 --loops 1 >"$out/server.log" 2>&1 &
server=$!
# The server prints "echo-server listening on 127.0.0.1 port N with 1 loop(s)" once it listens.
port=
for _ in $(seq 100); do
    port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$out/server.log")
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { echo "echo-server did not start: $(cat "$out/server.log")" >&2; exit 1; }

# The arguments as shown on the page (the port is whatever was free; the PID the server's).
shown="loadtest echo --port PORT -c 50 --rate 10k -d 5s --server-pid PID --id example --json docs/loadtest-example.json --svg docs/loadtest-example.svg"
"$bin/loadtest" echo --port "$port" -c 50 --rate 10k -d 5s --server-pid "$server" --id example -q \
    --json docs/loadtest-example.json --svg docs/loadtest-example.svg >"$out/report.txt"

version=$("$bin/loadtest" --version)
date=$(date -u +%Y-%m-%d)
machine="$(nproc) cores, $(uname -sr)"
python3 - "$out/report.txt" "$shown" "$version" "$date" "$machine" <<'PY'
import re, sys
report, shown, version, date, machine = sys.argv[1:]
text = open(report, encoding="utf-8").read().strip("\n")
region = (
    f"Run on {date} with {version} and echo-server (release builds, both on one machine: {machine}):\n\n"
    "```sh not-runnable: what scripts/example-report.sh runs, with the free port and the PID it finds\n"
    f"{shown}\n```\n\n"
    f"```text\n{text}\n```\n\n"
    "![The example run's chart: latency by percentile and throughput over time](loadtest-example.svg)\n\n"
    "Its JSON report: [loadtest-example.json](loadtest-example.json).\n"
)
path = "docs/loadtest.md"
page = open(path, encoding="utf-8").read()
pattern = re.compile(r"(<!-- BEGIN example-report[^\n]*-->\n).*?(<!-- END example-report -->)", re.S)
if not pattern.search(page):
    sys.exit("docs/loadtest.md has no example-report region")
open(path, "w", encoding="utf-8").write(pattern.sub(lambda m: m.group(1) + region + m.group(2), page, count=1))
PY
echo "wrote docs/loadtest-example.svg, docs/loadtest-example.json and docs/loadtest.md's example report"
