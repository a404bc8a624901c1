#!/usr/bin/env python3
"""Fails when a README code block that must compile differs from the code the tests compile.

- README.md's "## Quick start" block must equal the region between `// README quick start: begin`
  and `// README quick start: end` in Tests/AvenuesTests/QuickStartTests.swift.
- Every other ```swift block preceded by a line `<!-- compiled: NAME -->` must equal the region
  between `// README NAME: begin` and `// README NAME: end` in some file under Tests/.
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
    pattern = re.compile(r"// README " + re.escape(name) + r": begin\n(.*?)\n\s*// README " + re.escape(name) + r": end", re.S)
    for path, text in tests.items():
        match = pattern.search(text)
        if match:
            return path, lines(match.group(1), dedent=True)
    sys.exit(f"check_readme: no test holds the region '// README {name}: begin' … 'end'")


blocks = []
quick = re.search(r"## Quick start.*?```swift\n(.*?)```", readme, re.S)
if not quick:
    sys.exit("check_readme: README.md has no '## Quick start' section with a swift code block")
blocks.append(("quick start", lines(quick.group(1))))
for name, code in re.findall(r"<!-- compiled: ([\w -]+) -->\s*\n```swift\n(.*?)```", readme, re.S):
    blocks.append((name, lines(code)))

failed = False
for name, documented in blocks:
    path, compiled = region(name)
    if documented != compiled:
        failed = True
        print("\n".join(difflib.unified_diff(compiled, documented, os.path.relpath(path, root), "README.md", lineterm="")))
        print(f"check_readme: README.md's '{name}' block is not the code the tests compile")
if failed:
    sys.exit(1)
print("check_readme: " + ", ".join(f"{name} ({len(code)} lines)" for name, code in blocks) + " match the compiled code")
