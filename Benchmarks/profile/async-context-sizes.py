#!/usr/bin/env python3
# async-context-sizes.py BINARY [FILTER]: the async context (frame) size each async function asks its caller to
# allocate, read from the binary's async function pointers (the `...Tu` symbols: a relative function offset and
# a 32-bit context size). A suspended task holds the contexts of every function on its async stack in its
# allocator's slabs (1 KiB each, the first allocated at task creation): what an idle connection's task costs.
#
#     Benchmarks/profile/async-context-sizes.py .build-compare/release/async-echo-server AsyncSocket
import subprocess, sys, struct
bin = sys.argv[1]; flt = sys.argv[2] if len(sys.argv) > 2 else ""
syms = subprocess.run(["nm", bin], capture_output=True, text=True).stdout.split("\n")
sections = subprocess.run(["readelf", "-SW", bin], capture_output=True, text=True).stdout.split("\n")
secs = []
for line in sections:
    parts = line.replace("[ ", "[").split()
    if len(parts) > 6 and parts[0].startswith("["):
        try:
            addr = int(parts[3], 16); off = int(parts[4], 16); size = int(parts[5], 16)
            secs.append((addr, off, size))
        except ValueError: pass
data = open(bin, "rb").read()
def read(addr, n):
    for a, o, s in secs:
        if a <= addr < a + s and a != 0:
            return data[o + addr - a: o + addr - a + n]
out = []
for line in syms:
    p = line.split()
    if len(p) == 3 and p[2].endswith("Tu"):
        b = read(int(p[0], 16), 8)
        if b:
            size = struct.unpack("<iI", b)[1]
            out.append((p[2], size))
names = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(n for n, _ in out), capture_output=True, text=True).stdout.split("\n")
for (n, size), d in zip(out, names):
    if flt in d: print(f"{size:6d}  {d[:170]}")
