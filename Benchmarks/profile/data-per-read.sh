#!/usr/bin/env bash
# data-per-read.sh: user-space instructions of the `Data` a delegate receives per read, alone, exactly: the
# floor under every GCDAsyncSocket server's round trip that no change to the engine can remove, since
# CocoaAsyncSocket's API hands each read to its user as a `Data`.
#
#     Benchmarks/profile/data-per-read.sh [SIZE]        (default 64 bytes)
#
# Compiles data-per-read.swift (swiftc -O) into a scratch directory and runs it under `valgrind
# --tool=callgrind` for 100,000 and 200,000 iterations; the difference in instructions divided by 100,000 is
# one read's `Data`: made from the read's bytes, its bytes read once to send them, released (the exclusivity
# checks inside FoundationEssentials' `__DataStorage`, malloc and free included). Start-up cancels out, and
# the count does not depend on the machine's load. Compare it with a server's instructions per round trip
# (instructions-per-roundtrip.sh). Nothing is recorded.
set -euo pipefail
cd "$(dirname "$0")"
SIZE=${1:-64}
TMP=$(mktemp -d /tmp/data-per-read.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
swiftc -O -g -o "$TMP/data-per-read" data-per-read.swift
count() {
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.$1" "$TMP/data-per-read" "$1" "$SIZE" 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
short=$(count 100000)
long=$(count 200000)
echo "$(( (long - short) / 100000 )) instructions per $SIZE-byte read's Data (made, read once, released)"
