#!/usr/bin/env python3
"""Fails when README.md's quick start differs from the code compiled in QuickStartTests.swift."""
import os
import re
import sys
import textwrap

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
readme = open(os.path.join(root, "README.md")).read()
test = open(os.path.join(root, "Tests", "AvenuesTests", "QuickStartTests.swift")).read()

match = re.search(r"## Quick start.*?```swift\n(.*?)```", readme, re.S)
if not match:
    sys.exit("check_readme: README.md has no '## Quick start' section with a swift code block")
documented = [line for line in match.group(1).splitlines() if line.strip() and not line.startswith("import ")]

region = re.search(r"// README quick start: begin\n(.*?)\n\s*// README quick start: end", test, re.S)
if not region:
    sys.exit("check_readme: QuickStartTests.swift lost its README markers")
compiled = [line for line in textwrap.dedent(region.group(1)).splitlines() if line.strip()]

if documented != compiled:
    import difflib
    print("\n".join(difflib.unified_diff(compiled, documented, "QuickStartTests.swift", "README.md", lineterm="")))
    sys.exit("check_readme: README.md's quick start is not the code the tests compile")
print(f"check_readme: quick start matches ({len(compiled)} lines)")
