#!/usr/bin/env bash
# Builds the DocC catalog with the toolchain's own docc — no plugin in Package.swift — and fails on
# any warning (a broken ``Symbol`` link, an undocumented parameter). Output: .build/docs/Avenues.doccarchive
set -euo pipefail
cd "$(dirname "$0")/.."
command -v docc >/dev/null 2>&1 || { echo "error: docc (part of the Swift toolchain) was not found on PATH" >&2; exit 1; }
swift package dump-symbol-graph >/dev/null
graphs="$(mktemp -d)"
trap 'rm -rf "$graphs"' EXIT
# Only the library's graphs: the test targets' would add their own symbols.
found=0
for graph in .build/*/symbolgraph/Avenues.symbols.json .build/*/symbolgraph/Avenues@*.symbols.json; do
    [ -e "$graph" ] || continue
    cp "$graph" "$graphs"/
    found=1
done
[ "$found" = 1 ] || { echo "error: swift package dump-symbol-graph wrote no Avenues symbol graph" >&2; exit 1; }
mkdir -p .build/docs
docc convert Sources/Avenues/Avenues.docc \
    --additional-symbol-graph-dir "$graphs" \
    --output-dir .build/docs/Avenues.doccarchive \
    --fallback-display-name Avenues \
    --fallback-bundle-identifier org.avenues.Avenues \
    --warnings-as-errors
