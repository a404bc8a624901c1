#!/usr/bin/env python3
"""FilteredRows (through `filter-bench`) beside its references, alternating, in one run:

- 1,000,000 lines held in memory (the first million lines of pages-bench's access log, or --lines
  FILE) filtered for a query, beside `fzf --exact --filter QUERY` (Debian's fzf 0.38; with and
  without --no-sort) on the same lines;
- `history`'s filter on a repository (git/git by default: /work/.mirror/git+git/repo, or --repo),
  cold (git writes its log while the filter scans it), beside
  `git log --format='%h%x00%an%x00%s' | grep -ci QUERY` on the same repository: the times and the
  counts, which must be equal.

Usage: filter-bench.py [--lines FILE] [--repo REPO] [--query fix] [--memory-query firefox] [--runs 3]
(builds filter-bench in release first; fzf and git must be on PATH)
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_bench(binary, *arguments):
    out = subprocess.run([binary, *arguments], check=True, capture_output=True, text=True).stdout
    return out


def rounds(out):
    """`round N key value key value…` lines as dicts."""
    found = []
    for line in out.splitlines():
        if line.startswith("round "):
            parts = line.split()[2:]
            found.append({parts[i]: float(parts[i + 1]) for i in range(0, len(parts) - 1, 2)})
    return found


def field(out, prefix):
    for line in out.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return ""


def timed(command, **kwargs):
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, **kwargs)
    return time.monotonic() - start, result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", default=None)
    parser.add_argument("--repo", default="/work/.mirror/git+git/repo")
    parser.add_argument("--query", default="fix")
    parser.add_argument("--memory-query", default="firefox")
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    for tool in ["fzf", "git"]:
        if shutil.which(tool) is None:
            sys.exit(f"filter-bench: {tool} is required; install it (apt-get install {tool}) and run again")
    subprocess.run(["swift", "build", "--package-path", HERE, "-c", "release", "--product", "filter-bench"], check=True)
    bin_dir = subprocess.run(["swift", "build", "--package-path", HERE, "-c", "release", "--show-bin-path"],
                             check=True, capture_output=True, text=True).stdout.strip()
    binary = os.path.join(bin_dir, "filter-bench")

    lines = options.lines
    if lines is None:
        source = os.path.join("/tmp", "avenues-pages-bench", "access.log")
        if not os.path.exists(source):
            subprocess.run([sys.executable, os.path.join(HERE, "pages-bench.py"), "--runs", "0"], check=True)
        lines = "/tmp/avenues-filter-bench-1m.txt"
        if not os.path.exists(lines):
            with open(source, "rb") as src, open(lines, "wb") as out:
                for index, line in enumerate(src):
                    if index == 1_000_000:
                        break
                    out.write(line)

    print(f"1,000,000 lines in memory ({os.path.getsize(lines) / 1e6:.0f} MB), query “{options.memory_query}”")
    ours_first, ours_full, fzf_sorted, fzf_unsorted = [], [], [], []
    typing = ""
    for _ in range(options.runs):
        out = run_bench(binary, "memory", lines, options.memory_query)
        for r in rounds(out)[1:]:  # the first round warms up
            ours_first.append(r["first-screen-ms"])
            ours_full.append(r["complete-ms"])
        matches = int(rounds(out)[-1]["matches"])
        typing = field(out, "typing ")
        with open(lines, "rb") as stdin:
            took, found = timed(["fzf", "--exact", "--filter", options.memory_query], stdin=stdin)
        fzf_sorted.append(took * 1000)
        if len(found.splitlines()) != matches:
            print(f"  COUNT DIFFERS: fzf {len(found.splitlines())}, ours {matches}")
        with open(lines, "rb") as stdin:
            took, _ = timed(["fzf", "--exact", "--no-sort", "--filter", options.memory_query], stdin=stdin)
        fzf_unsorted.append(took * 1000)
    median = statistics.median
    print(f"  keystroke to a first screen of matches: median {median(ours_first):.1f} ms (all: {', '.join(f'{v:.1f}' for v in ours_first)})")
    print(f"  full scan: median {median(ours_full):.0f} ms; fzf --filter {median(fzf_sorted):.0f} ms "
          f"({median(ours_full) / median(fzf_sorted):.2f}×), --no-sort {median(fzf_unsorted):.0f} ms ({median(ours_full) / median(fzf_unsorted):.2f}×); {matches} matches")
    print(f"  typing the query at 50 ms a character: {typing}")

    if os.path.isdir(options.repo):
        # A bare repository (the mirror) or a work tree.
        git = ["git", "-C", options.repo] if os.path.isdir(os.path.join(options.repo, ".git")) else ["git", f"--git-dir={options.repo}"]
        count = subprocess.run(git + ["rev-list", "--count", "HEAD"], capture_output=True, text=True).stdout.strip()
        print(f"\nhistory's filter on {options.repo} ({count} commits), query “{options.query}”, cold")
        firsts, fulls, greps, counts, rows, gits = [], [], [], set(), [], []
        typing = peak = ""
        for _ in range(options.runs):
            out = run_bench(binary, "history", options.repo, options.query)
            for r in rounds(out):
                firsts.append(r["first-screen-ms"])
                fulls.append(r["complete-ms"])
                gits.append(r["complete-ms"] - r["git-done-ms"])
                counts.add(int(r["matches"]))
                rows.append(int(r["last-first-screen-row"]))
            typing, peak = field(out, "typing "), field(out, "peak-mib ")
            took, found = timed(["sh", "-c", " ".join(git) + " log --format='%h%x00%an%x00%s' | grep -aci " + options.query])
            greps.append(took * 1000)
            counts.add(int(found.strip() or b"0"))
        print(f"  keystroke to a first screen of matches: median {median(firsts):.1f} ms (all: {', '.join(f'{v:.0f}' for v in firsts)}); "
              f"its last match is row {max(rows)}")
        print(f"  complete count: median {median(fulls):.0f} ms; git log | grep -ci {median(greps):.0f} ms ({median(fulls) / median(greps):.2f}×); "
              f"counts {'equal: ' + str(counts.pop()) if len(counts) == 1 else 'DIFFER: ' + str(sorted(counts))}")
        print(f"  the count was complete {median(gits):+.1f} ms after git had written the whole log (median; all within "
              f"{min(gits):+.1f}…{max(gits):+.1f} ms): history's git log, with its own fields, is the floor")
        print(f"  typing the query at 50 ms a character: {typing}; peak memory {float(peak):.1f} MiB")


if __name__ == "__main__":
    main()
