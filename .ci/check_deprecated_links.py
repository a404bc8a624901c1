#!/usr/bin/env python3
"""Fails when a doc comment or a DocC article links a deprecated name.

The deprecated names (the AsyncMux spellings kept for migration) are read from the symbol graph that
`swift package dump-symbol-graph` writes: every symbol marked unconditionally deprecated. A symbol
link (``Type/member`` or ``member``) in a public symbol's `///` comment or in an article of
`Sources/Avenues/Avenues.docc` is flagged when:

- it names a deprecated symbol by its path (``Multiplexer/request()``), or
- it names a member by itself (``request()``) and every symbol of that name is deprecated (a name
  that is also a current member, like `clear()`, is the current one).

Docs teach one dialect; the old names live in CHANGELOG.md's rename table and in the migration
module `AvenuesAsyncMuxCompat` (tested by `Compat/`).
"""
import glob
import json
import os
import re
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sources = os.path.join(root, "Sources") + os.sep
graphs = glob.glob(os.path.join(root, ".build", "*", "symbolgraph", "*.symbols.json")) + glob.glob(
    os.path.join(root, ".build", "symbolgraph", "*.symbols.json"))
if not graphs:
    sys.exit("check_deprecated_links: no symbol graph; run `swift package dump-symbol-graph` first")

LINK = re.compile(r"``([^`]+)``")


def strip_disambiguation(component):
    # ``Avenue/cancel(at:)-3x9ka`` or ``Multiplexer/value()-swift.method``
    return re.sub(r"-[0-9a-z.]+$", "", component) if "(" in component or "-swift." in component else component


deprecated_paths, deprecated_names, current_names = set(), set(), set()
comments = []  # (where, text)
for path in graphs:
    graph = json.load(open(path))
    for symbol in graph["symbols"]:
        components = symbol["pathComponents"]
        is_deprecated = any(a.get("isUnconditionallyDeprecated") or "deprecated" in a for a in symbol.get("availability", []))
        if is_deprecated:
            deprecated_paths.add("/".join(components))
            deprecated_names.add(components[-1])
        else:
            current_names.add(components[-1])
        uri = symbol.get("location", {}).get("uri", "")
        if not uri.startswith("file://" + sources) or is_deprecated:
            continue  # a deprecated symbol's own comment may name what it replaced
        doc = symbol.get("docComment", {})
        if doc.get("uri", uri) != uri:
            continue  # inherited from a protocol requirement: checked there
        line = symbol["location"]["position"]["line"] + 1
        where = f"{uri[len('file://' + root) + 1:]}:{line}"
        comments.append((where, "\n".join(entry.get("text", "") for entry in doc.get("lines", []))))

for article in sorted(glob.glob(os.path.join(root, "Sources", "Avenues", "Avenues.docc", "*.md"))):
    comments.append((os.path.relpath(article, root), open(article, encoding="utf-8").read()))

only_deprecated = deprecated_names - current_names
found = []
for where, text in comments:
    for link in LINK.findall(text):
        components = [strip_disambiguation(c) for c in link.split("/") if c and c != "Avenues"]
        if not components:
            continue
        joined = "/".join(components)
        if joined in deprecated_paths or (len(components) == 1 and components[0] in only_deprecated):
            found.append(f"{where}: links the deprecated ``{link}``")
for entry in sorted(set(found)):
    print(entry)
print(f"check_deprecated_links: {len(comments)} comments and articles, {len(deprecated_paths)} deprecated symbols, {len(set(found))} links to them")
sys.exit(1 if found else 0)
