"""Prints a callgrind profile's total instructions and the number of calls to one function (or to any of
several, comma-separated: `send,cepoll_send` counts the C servers' sends and ours, which go to the kernel
from the shim's `cepoll_send`, not through libc's `send`).

    python3 callgrind-calls.py callgrind.out send,cepoll_send
"""
import re
import sys

path, targets = sys.argv[1], set(sys.argv[2].split(","))
names = {}
total = calls = 0
pending = None
for line in open(path):
    if line.startswith(("fn=", "cfn=")):
        kind, rest = line.rstrip("\n").split("=", 1)
        m = re.match(r"\((\d+)\)(?: (.*))?", rest)
        if m:
            if m.group(2):
                names[m.group(1)] = m.group(2)
            pending = names.get(m.group(1)) if kind == "cfn" else None
        continue
    if line.startswith("calls=") and pending is not None:
        if pending in targets:
            calls += int(line[6:].split()[0])
        pending = None
    elif line.startswith(("summary:", "totals:")):
        total = int(line.split()[1])
print(total, calls)
