#!/usr/bin/env python3
"""Records the scroll traces under Benchmarks/Traces: `browse` and `history` driven in tmux the way
people move through a list — keys held down (key repeat at 30 and 15 a second), bursts of 2 to 10
PgDn, reading a screen at a time, and jumps between search matches — each written by the program's
own `--record-trace` (JSON Lines, with the hints the program gave).

    swift build --package-path Examples -c release
    python3 Benchmarks/record-traces.py [--browse-root /usr] [--repository PATH_TO_GIT_GIT] [--only NAME]

`scroll-sim --trace FILE` replays one; the scroll simulation's tests replay every one and assert the
adaptive policy's targets on each (Benchmarks/README.md). Timing comes from this script's sleeps, so
a re-recording differs a little; commit the new files with the figures they give.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "Examples", "Tests", "terminal"))
from tmuxlib import Tmux, fail  # noqa: E402

TRACES = os.path.join(HERE, "Traces")


def hold(tmux, key, per_second, seconds):
    """A key held down: one press every 1/per_second s (a terminal's key repeat)."""
    interval = 1.0 / per_second
    end = time.monotonic() + seconds
    next_press = time.monotonic()
    while next_press < end:
        tmux.keys("s", key)
        next_press += interval
        time.sleep(max(0.0, next_press - time.monotonic()))


def burst(tmux, key, times, per_second=8):
    hold(tmux, key, per_second, times / per_second)


def held_keys(tmux):
    time.sleep(1)
    hold(tmux, "Down", 30, 8)
    time.sleep(2)
    hold(tmux, "Down", 15, 6)
    time.sleep(1)
    hold(tmux, "Up", 30, 4)
    time.sleep(1)


def pgdn_bursts(tmux):
    time.sleep(1)
    for size in (2, 5, 3, 10, 4, 7, 2, 6):
        burst(tmux, "PgDn", size)
        time.sleep(1.5)
    burst(tmux, "PgUp", 4)
    time.sleep(1)


def reading(tmux):
    time.sleep(1)
    for index in range(12):
        time.sleep(2.5)
        tmux.keys("s", "PgDn")
        if index % 4 == 3:  # a few lines on, as a reader does now and then
            time.sleep(0.8)
            hold(tmux, "Down", 4, 1)
    time.sleep(1)


def search_jumps(tmux, query):
    time.sleep(1)
    tmux.keys("s", "/")
    for character in query:
        tmux.keys("s", "-l", character)
        time.sleep(0.1)
    time.sleep(1)
    tmux.keys("s", "Escape")  # back to the whole log: n and N go between its matches
    time.sleep(1)
    for _ in range(15):
        tmux.keys("s", "n")
        time.sleep(1.5)
    for _ in range(3):
        tmux.keys("s", "N")
        time.sleep(1.5)
    time.sleep(1)


def mixed(tmux):
    """Recorded after the policy was tuned on the others, to check it on a session it never saw."""
    time.sleep(1.5)
    hold(tmux, "Down", 20, 5)
    time.sleep(1.2)
    for size in (3, 6):
        burst(tmux, "PgDn", size, per_second=6)
        time.sleep(2)
    hold(tmux, "Up", 25, 3)
    time.sleep(0.8)
    tmux.keys("s", "G")
    time.sleep(1.5)
    hold(tmux, "Up", 30, 4)
    time.sleep(1)
    tmux.keys("s", "g")
    time.sleep(1.5)
    for _ in range(4):
        tmux.keys("s", "PgDn")
        time.sleep(2.2)
    time.sleep(1)


def record(name, command, moves, ready):
    tmux = Tmux()
    path = os.path.join(TRACES, name + ".jsonl")
    try:
        tmux.start("s", f"{command} --record-trace {path}", width=120, height=40)
        tmux.wait("s", f"{name}: the first screen", ready, deadline=120)
        moves(tmux)
        tmux.keys("s", "q")
        time.sleep(0.5)
    finally:
        tmux.close()
    with open(path) as trace:
        lines = trace.read().splitlines()
    if len(lines) < 10:
        fail(f"{name}: only {len(lines)} lines recorded")
    print(f"{name}: {len(lines)} lines -> {os.path.relpath(path, ROOT)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--browse-root", default="/usr")
    parser.add_argument("--repository", default="/work/.mirror/git+git/repo")
    parser.add_argument("--only")
    arguments = parser.parse_args()
    os.makedirs(TRACES, exist_ok=True)
    release = os.path.join(ROOT, "Examples", ".build", "release")
    cache = tempfile.mkdtemp(prefix="avenues-traces-")
    browse = f"{release}/browse {arguments.browse_root} --cache {cache}/browse"
    history = f"{release}/history {arguments.repository} --cache {cache}/history"
    listed = lambda screen: any("files" in line for line in screen[:2])  # noqa: E731
    logged = lambda screen: any("commits" in line for line in screen[:2])  # noqa: E731
    sessions = [
        ("browse-held-keys", browse, held_keys, listed),
        ("browse-pgdn-bursts", browse, pgdn_bursts, listed),
        ("browse-reading", browse, reading, listed),
        ("history-held-keys", history, held_keys, logged),
        ("history-pgdn-bursts", history, pgdn_bursts, logged),
        ("history-search-jumps", history, lambda tmux: search_jumps(tmux, "Git 2."), logged),
        ("browse-mixed", browse, mixed, listed),
        ("history-mixed", history, mixed, logged),
    ]
    for name, command, moves, ready in sessions:
        if arguments.only and arguments.only != name:
            continue
        record(name, command, moves, ready)
    subprocess.run(["rm", "-rf", cache], check=False)


if __name__ == "__main__":
    main()
