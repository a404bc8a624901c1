#!/usr/bin/env python3
"""Fails when a public symbol declared in Sources/ has no /// summary.

Reads the symbol graph that `swift package dump-symbol-graph` writes (public symbols only), so it
sees exactly what a user of the library sees, including members of extensions.
"""
import glob
import json
import os
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sources = os.path.join(root, "Sources") + os.sep
graphs = glob.glob(os.path.join(root, ".build", "*", "symbolgraph", "*.symbols.json")) + glob.glob(
    os.path.join(root, ".build", "symbolgraph", "*.symbols.json"))
missing, checked = [], 0
for path in graphs:
    graph = json.load(open(path))
    for symbol in graph["symbols"]:
        uri = symbol.get("location", {}).get("uri", "")
        if not uri.startswith("file://" + sources):
            continue  # generated test runners, or members inherited from the standard library
        checked += 1
        doc = symbol.get("docComment", {})
        lines = [line.get("text", "").strip() for line in doc.get("lines", [])]
        # A symbol without its own comment shows the protocol requirement's; that does not count.
        inherited = doc.get("uri", uri) != uri
        if not any(lines) or inherited:
            where = uri[len("file://" + root) + 1:]
            line = symbol["location"]["position"]["line"] + 1
            missing.append(f"{where}:{line}: {symbol['kind']['displayName'].lower()} {'.'.join(symbol['pathComponents'])}")
if checked == 0:
    sys.exit("check_docs: no public symbols found; run `swift package dump-symbol-graph` first")
for entry in sorted(missing):
    print("missing /// summary:", entry)
print(f"check_docs: {checked} public symbols, {len(missing)} without a summary")
sys.exit(1 if missing else 0)
