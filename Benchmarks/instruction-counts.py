#!/usr/bin/env python3
"""Instructions per operation of the hot paths, counted by callgrind, beside their references.

Each scenario of the `instruction-counts` executable runs under `valgrind --tool=callgrind` at n and
2n operations; (I(2n) - I(n)) / n is the count per operation, with start-up and setup cancelled out.
Counts are deterministic for one binary (wall time on a shared machine is not), so they can gate CI:

    python3 Benchmarks/instruction-counts.py                      # print the table
    python3 Benchmarks/instruction-counts.py --check Benchmarks/Thresholds/instructions.json
    python3 Benchmarks/instruction-counts.py --record Benchmarks/Thresholds/instructions.json

--check fails when a gated scenario takes more instructions per operation than its threshold;
--record writes thresholds at the measured count plus a margin (after an intended change): 25 % for
single-threaded paths, 50 % for those that move between threads.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# Thresholds sit this far above the recorded count. Single-threaded hits repeat to within 1 %; the
# multi-threaded scenarios (a miss hands its fetch to a worker; claims run on workers) move by up to
# 10 % with how threads are scheduled, more on a loaded machine. The regressions the gate exists for
# (a hit that allocates or runs unspecialized, a miss path that stops specializing) add 50 % or more.
EXACT, THREADED = 1.25, 1.5

# (scenario, operations n, reference it is compared with or None, threshold margin or None: not gated)
SCENARIOS = [
    ("mutex-read", 100_000, None, None),
    ("avenue-item-at", 100_000, "mutex-read", EXACT),
    ("prefetcher-show", 2_000, None, EXACT),
    ("asyncmux-a-hit", 100_000, None, None),
    ("asyncmux-a2-hit", 100_000, None, None),
    ("multiplexer-hit", 100_000, "asyncmux-a-hit", EXACT),
    ("multiplexer-map-hit", 100_000, "asyncmux-a-hit", EXACT),
    ("task-per-key-miss", 5_000, None, None),
    ("asyncmux-a2-miss", 5_000, None, None),
    ("multiplexer-map-miss", 5_000, "asyncmux-a2-miss", THREADED),
    ("autoprocessor-claim", 5_000, None, THREADED),
    # A small file downloaded through AsyncMedia from a transport in the process: its bookkeeping.
    # 77.6-86.6 k instructions a file in ten runs (two with the other core busy): threaded.
    ("asyncmedia-file", 500, None, THREADED),
]

# Each count is the least of this many runs: other threads' work only ever adds instructions.
REPETITIONS = 2


def build():
    """The release `instruction-counts`, built with the flags every other release build of this
    package uses (so CI's Benchmarks build is reused, not redone), copied without its debug info."""
    subprocess.run(
        ["swift", "build", "-c", "release", "--package-path", HERE, "--product", "instruction-counts"],
        check=True,
    )
    path = subprocess.run(
        ["swift", "build", "-c", "release", "--package-path", HERE, "--show-bin-path"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    return stripped(os.path.join(path, "instruction-counts"))


def stripped(binary):
    """A copy of `binary` without debug info. clang writes DWARF 5 for the C targets
    (CAvenuesNetwork), more than valgrind 3.19 (Debian 12's) can read: it gives up on the whole
    binary ("Possibly corrupted debuginfo file"). Counting instructions needs no debug info, and
    stripping it changes no instruction."""
    tool = next((t for t in ["llvm-objcopy", "objcopy"] if shutil.which(t)), None)
    if tool is None:
        sys.exit("error: neither llvm-objcopy (the Swift toolchain's) nor objcopy is on PATH")
    copy = os.path.join(tempfile.mkdtemp(prefix="instruction-counts-"), "instruction-counts")
    subprocess.run([tool, "--strip-debug", binary, copy], check=True)
    return copy


def collected(binary, scenario, operations):
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", binary, scenario, str(operations)],
        capture_output=True, text=True,
        # Hash seeds are random per process, and so are dictionaries' probe lengths: fix them.
        env={**os.environ, "SWIFT_DETERMINISTIC_HASHING": "1"},
    )
    match = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode != 0 or match is None:
        sys.exit(f"error: callgrind could not count {scenario} ({operations} operations):\n{run.stderr[-2000:]}")
    return int(match.group(1))


def per_operation(binary, scenario, operations):
    def least(count):
        return min(collected(binary, scenario, count) for _ in range(REPETITIONS))
    return (least(2 * operations) - least(operations)) / operations


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", help="a built instruction-counts executable (default: build it)")
    parser.add_argument("--check", metavar="JSON", help="fail when a gated scenario exceeds its threshold")
    parser.add_argument("--record", metavar="JSON", help="write thresholds from this run")
    parser.add_argument("--only", nargs="*", help="scenarios to run (default: all)")
    arguments = parser.parse_args()

    if shutil.which("valgrind") is None:
        sys.exit("error: valgrind is not on PATH (Debian: apt-get install valgrind)")
    binary = stripped(arguments.binary) if arguments.binary else build()
    chosen = [s for s in SCENARIOS if not arguments.only or s[0] in arguments.only]

    counts = {}
    print(f"{'scenario':<24}{'instructions/op':>16}  reference")
    for name, operations, reference, _ in chosen:
        counts[name] = per_operation(binary, name, operations)
        versus = ""
        if reference in counts:
            versus = f"{counts[name] / counts[reference]:.2f}x {reference} ({counts[reference]:,.0f})"
        print(f"{name:<24}{counts[name]:>16,.0f}  {versus}", flush=True)

    margins = {name: margin for name, _, _, margin in chosen if margin}
    gated = set(margins)
    if arguments.record:
        thresholds = {name: round(counts[name] * margins[name]) for name in sorted(gated)}
        with open(arguments.record, "w") as file:
            json.dump(thresholds, file, indent=2, sort_keys=True)
            file.write("\n")
        print(f"wrote {arguments.record}")
    if arguments.check:
        with open(arguments.check) as file:
            thresholds = json.load(file)
        failures = [
            f"{name}: {counts[name]:,.0f} instructions per operation, threshold {thresholds[name]:,}"
            for name in sorted(gated) if name in thresholds and counts[name] > thresholds[name]
        ]
        missing = sorted(gated - thresholds.keys())
        if missing:
            failures.append(f"no threshold for {', '.join(missing)} (run with --record after checking the counts)")
        if failures:
            sys.exit("error: instruction counts above their thresholds:\n  " + "\n  ".join(failures))
        print(f"all {len(gated)} gated scenarios within {arguments.check}")


if __name__ == "__main__":
    main()
