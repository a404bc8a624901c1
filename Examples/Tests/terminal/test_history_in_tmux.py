#!/usr/bin/env python3
"""Runs `history` in a real terminal (a detached 120x40 tmux session) on a generated repository of
20,000 commits and checks what a user sees.

Usage: test_history_in_tmux.py BIN_DIR   (the folder holding the built `history`)

- the first screen shows the newest 38 commits, each with its diff stat, and an exact count;
- PgDn shows the next 38; G shows the root commit at the bottom (one page asked with --skip: the
  status line never holds more than a few pages); g goes back to the top;
- `/needle` finds the one commit whose subject says so, 15,680 commits down;
- q exits with status 0 and leaves the terminal sane; a second run shows diff stats from the disk
  cache; a folder that is not a repository is one line on stderr and exit status 1.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from gitrepo import NEEDLE_AT, make_repo
from tmuxlib import Tmux, exited, fail, terminal_is_sane

COMMITS = 20_000
STAT = re.compile(r"\d+ files? \+\d+ −\d+\s*$")


def rows(screen):
    """The commit rows: everything between the heading and the status line."""
    return screen[1:-1]


def row_step(row):
    match = re.search(r"step (\d+)", row)
    return int(match.group(1)) if match else None


def shows(screen, first, last):
    """The rows show commits `first` down to `last` (step numbers, newest first), all with stats."""
    table = rows(screen)
    if len(table) != 38 or not all(STAT.search(row) for row in table):
        return False
    return row_step(table[0]) == first and row_step(table[-1]) == last


def status_number(screen, label):
    match = re.search(label + r" (\d+)", screen[-1])
    return int(match.group(1)) if match else None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if shutil.which("tmux") is None or shutil.which("git") is None:
        fail("tmux and git are required for the history terminal test (apt-get install tmux git)")
    history = os.path.join(sys.argv[1], "history")
    if not os.access(history, os.X_OK):
        fail(f"{history} is not built")

    work = tempfile.mkdtemp(prefix="avenues-history-")
    tmux = Tmux()
    try:
        repository = make_repo(os.path.join(work, "repo"), COMMITS)
        root = subprocess.run(["git", "-C", repository, "rev-list", "--max-parents=0", "--abbrev-commit", "HEAD"],
                              check=True, capture_output=True, text=True).stdout.strip()
        cache = os.path.join(work, "cache")
        command = f"{history} {repository} --cache {cache}; echo EXIT=$?; stty -a; sleep 120"

        tmux.start("h", command)
        screen = tmux.wait("h", "the first screen shows the newest commits with diff stats",
                           lambda s: len(s) == 40 and shows(s, COMMITS, COMMITS - 37) and " of 20000 " in s[-1])
        first = re.search(r"first screen (\d+) ms", screen[-1])
        print(f"ok: first screen, {COMMITS} commits counted, first screen {first.group(1) if first else '?'} ms")

        tmux.keys("h", "PageDown")
        tmux.wait("h", "PgDn shows the next 38 commits", lambda s: shows(s, COMMITS - 38, COMMITS - 75) and s[-1].lstrip().startswith("39–76 of 20000"))
        print("ok: PgDn")

        tmux.keys("h", "G")
        screen = tmux.wait("h", "G shows the root commit at the bottom",
                           lambda s: shows(s, 38, 1) and s[-2].lstrip().startswith(root) and s[-1].lstrip().startswith("19963–20000 of 20000"))
        resident = status_number(screen, "pages resident")
        if resident is None or resident > 6:
            fail(f"after G, {resident} pages are resident: pages between were loaded", screen)
        print(f"ok: G shows the root commit {root}; {resident} pages resident")

        tmux.keys("h", "g")
        tmux.wait("h", "g goes back to the top", lambda s: shows(s, COMMITS, COMMITS - 37) and s[-1].lstrip().startswith("1–38 "))
        tmux.keys("h", "/", "needle", "Enter")
        row = COMMITS - NEEDLE_AT + 1
        screen = tmux.wait("h", "the search finds the needle",
                           lambda s: f"found “needle” at {row}" in s[-1] and any("needle in the history" in r for r in rows(s)))
        print(f"ok: / found the needle at row {row}")

        tmux.keys("h", "q")
        screen = tmux.wait("h", "history exits after q", exited)
        terminal_is_sane(tmux, "h", screen, "history")
        print("ok: q exits and the terminal is sane")

        tmux.start("w", command)
        screen = tmux.wait("w", "the warm first screen shows stats from the disk cache",
                           lambda s: len(s) == 40 and shows(s, COMMITS, COMMITS - 37) and (status_number(s, "cache hits") or 0) > 0)
        print(f"ok: a second run found {status_number(screen, 'cache hits')} diff stats in the disk cache")
        tmux.keys("w", "C-c")
        terminal_is_sane(tmux, "w", tmux.wait("w", "history exits after Ctrl-C", exited), "history")

        empty = os.path.join(work, "not-a-repo")
        os.makedirs(empty)
        tmux.start("e", f"{history} {empty} --cache {cache}; echo EXIT=$?; stty -a; sleep 120")
        screen = tmux.wait("e", "history exits on a folder that is not a repository", exited)
        errors = [line for line in screen if line.startswith("history:")]
        if len(errors) != 1 or "not in a git repository" not in errors[0] or not any(line.startswith("EXIT=1") for line in screen):
            fail("a folder that is not a repository must be one line and exit status 1", screen)
        print("ok:", errors[0])
    finally:
        tmux.close()
        shutil.rmtree(work, ignore_errors=True)
    print("history terminal test passed")


if __name__ == "__main__":
    main()
