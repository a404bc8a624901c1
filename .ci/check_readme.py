#!/usr/bin/env python3
"""Fails when a documented code block that must compile differs from the code the tests compile.

- README.md's "## Quick start" block must equal the region between `// README quick start: begin`
  and `// README quick start: end` in Tests/AvenuesTests/QuickStartTests.swift.
- Every other ```swift block of README.md preceded by a line `<!-- compiled: NAME -->` must equal
  the region between `// README NAME: begin` and `// README NAME: end` in some file under Tests/.
- The same holds for the DocC articles (Sources/Avenues/Avenues.docc/*.md), whose regions are marked
  `// DocC NAME: begin` … `end`, or `// README NAME` for an example the README shows too. Every
  article's ```swift block must be compiled this way.
Import lines and blank lines are ignored; indentation of the test region is removed.
"""
import difflib
import glob
import os
import re
import sys
import textwrap

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
readme = open(os.path.join(root, "README.md")).read()
tests = {path: open(path).read() for path in glob.glob(os.path.join(root, "Tests", "**", "*.swift"), recursive=True)}


def lines(code, dedent=False):
    code = textwrap.dedent(code) if dedent else code
    return [line for line in code.splitlines() if line.strip() and not line.startswith("import ")]


def region(name):
    pattern = re.compile(r"// (README|DocC) " + re.escape(name) + r": begin\n(.*?)\n\s*// \1 " + re.escape(name) + r": end", re.S)
    for path, text in tests.items():
        match = pattern.search(text)
        if match:
            return path, lines(match.group(2), dedent=True)
    sys.exit(f"check_readme: no test holds the region '// README {name}: begin' (or '// DocC {name}: begin') … 'end'")


blocks = []
quick = re.search(r"## Quick start.*?```swift\n(.*?)```", readme, re.S)
if not quick:
    sys.exit("check_readme: README.md has no '## Quick start' section with a swift code block")
blocks.append(("quick start", lines(quick.group(1))))
for name, code in re.findall(r"<!-- compiled: ([\w -]+) -->\s*\n```swift\n(.*?)```", readme, re.S):
    blocks.append((name, lines(code)))

articles = sorted(glob.glob(os.path.join(root, "Sources", "Avenues", "Avenues.docc", "*.md")))
for article in articles:
    text = open(article).read()
    compiled = re.findall(r"<!-- compiled: ([\w -]+) -->\s*\n```swift\n(.*?)```", text, re.S)
    if len(compiled) != text.count("```swift"):
        sys.exit(f"check_readme: {os.path.relpath(article, root)} has a swift block without '<!-- compiled: NAME -->' above it")
    for name, code in compiled:
        blocks.append((name, lines(code)))

failed = False
for name, documented in blocks:
    path, compiled = region(name)
    if documented != compiled:
        failed = True
        print("\n".join(difflib.unified_diff(compiled, documented, os.path.relpath(path, root), "documented", lineterm="")))
        print(f"check_readme: the documented '{name}' block is not the code the tests compile")
if failed:
    sys.exit(1)
print("check_readme: " + ", ".join(f"{name} ({len(code)} lines)" for name, code in blocks) + " match the compiled code")
