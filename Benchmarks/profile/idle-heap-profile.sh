#!/usr/bin/env bash
# idle-heap-profile.sh SERVER [CONNS]: where a server's heap goes with CONNS (1,000) idle connections held by the
# C loadgen: valgrind's massif at its peak, the allocation tree by call stack, demangled. For servers that take
# `--port P --loops N` (ours and the SwiftNIO peers). Divide a line's bytes by CONNS for its share of one
# connection (requested sizes: glibc adds 8 bytes and rounds each chunk up to 16).
#
#     Benchmarks/profile/idle-heap-profile.sh .build-compare/release/async-echo-server
#
# valgrind 3.19 cannot read Swift 6.3's DWARF: the server is profiled from a copy stripped of debug info
# (its symbol table stays), as the callgrind scripts do.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 SERVER [CONNS]" >&2; exit 2; }
SERVER="$1"; CONNS="${2:-1000}"
source "$(dirname "$0")/c-echo-lib.sh"
c_echo_setup idle-heap loadgen
PORT="${PORT:-19112}"
objcopy --strip-debug "$SERVER" "$TMP/server"
valgrind --tool=massif --massif-out-file="$TMP/massif.out" --depth=12 --threshold=0.5 --detailed-freq=1 \
    "$TMP/server" --port "$PORT" --loops 1 >"$TMP/server.log" 2>&1 &
pid=$!
for _ in $(seq 150); do grep -q listening "$TMP/server.log" && break; sleep 0.2; done
"$C_BIN/loadgen" idle 127.0.0.1 "$PORT" "$CONNS" 8 >/dev/null 2>&1 &
sleep 6  # connections opened (loadgen ramps them in well under a second) and held; massif samples the peak
kill -INT "$pid"; wait "$pid" 2>/dev/null || true
peak=$(ms_print "$TMP/massif.out" | grep -o "[0-9]* (peak)" | cut -d' ' -f1)
ms_print "$TMP/massif.out" | awk -v p="$peak" '$1 == p && NF == 6 {f = 1} f && /^ *[0-9]+ +[0-9,]+ +[0-9,]+/ && $1 != p {exit} f' \
    | swift demangle --simplified | sed -E 's/ 0x[0-9A-F]+: / /; s/ \(in [^)]*\)//' | grep -E "^[0-9]|^[| ]*->" | cut -c1-180
