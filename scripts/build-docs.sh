#!/usr/bin/env bash
# build-docs.sh: the API reference of EpollLoop, LoopSocket and LoadTest, built with the toolchain's own DocC
# from the catalogs in Sources/<Module>/<Module>.docc and the symbol graphs of a `swift build`, as static sites in
# .build-docs/<Module>.doccarchive (git-ignored). No package plugin: the root package depends on nothing.
#
#     scripts/build-docs.sh
#     python3 -m http.server -d .build-docs/EpollLoop.doccarchive 8000   # http://127.0.0.1:8000/documentation/epollloop
#
# Fails (status 1) on any DocC warning, a link to a symbol that does not exist above all
# (`--warnings-as-errors`), and on a public symbol without a doc comment. About 20 s after `swift build`.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.build-docs
MODULES=(EpollLoop LoopSocket LoadTest)

DOCC=$(command -v docc || true)
[ -n "$DOCC" ] || DOCC="$(dirname "$(readlink -f "$(command -v swift)")")/docc"
[ -x "$DOCC" ] || { echo "build-docs: no docc on PATH or beside swift" >&2; exit 2; }

# The public symbols of every module, with their doc comments (the build is reused when it is current).
GRAPHS=$(swift package dump-symbol-graph --skip-synthesized-members | sed -n 's/^Files written to //p')
[ -d "$GRAPHS" ] || { echo "build-docs: swift package dump-symbol-graph wrote no symbol graphs" >&2; exit 2; }

rm -rf "$OUT"
status=0
for module in "${MODULES[@]}"; do
    mkdir -p "$OUT/symbol-graphs/$module"
    cp "$GRAPHS/$module.symbols.json" "$OUT/symbol-graphs/$module/"
    # Extensions of other modules' types, when the graph has any.
    cp "$GRAPHS/$module@"*.symbols.json "$OUT/symbol-graphs/$module/" 2>/dev/null || true

    # Every public declaration carries a doc comment.
    python3 - "$OUT/symbol-graphs/$module/$module.symbols.json" <<'PY' || status=1
import json, sys
graph = json.load(open(sys.argv[1]))
missing = [s for s in graph["symbols"] if "docComment" not in s]
for s in missing:
    where = s.get("location", {}).get("uri", "?").split("/Sources/")[-1]
    line = s.get("location", {}).get("position", {}).get("line", -1) + 1
    print(f"Sources/{where}:{line}: error: public {s['kind']['displayName'].lower()} "
          f"'{'.'.join(s['pathComponents'])}' has no doc comment", file=sys.stderr)
sys.exit(1 if missing else 0)
PY

    "$DOCC" convert "Sources/$module/$module.docc" \
        --additional-symbol-graph-dir "$OUT/symbol-graphs/$module" \
        --fallback-display-name "$module" --fallback-bundle-identifier "org.epollloop.$module" \
        --output-path "$OUT/$module.doccarchive" --warnings-as-errors || status=1
done
[ "$status" = 0 ] && echo "build-docs: $(printf '%s ' "${MODULES[@]}")-> $OUT/" || echo "build-docs: failed" >&2
exit "$status"
