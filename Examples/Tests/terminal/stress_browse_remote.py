#!/usr/bin/env python3
"""Runs `browse URL` cold, many times, against nginx's autoindex, pressing random keys, and checks
that every run ends when asked — no hang, no crash — with the terminal given back.

Usage: stress_browse_remote.py BIN_DIR [--runs N] [--seed S]

Seen 2026-11-23: 25 hangs in about 200 such runs (a deadlock between a URLSession cancellation and
its delegate queue; only SIGKILL ended them) and a crash after 6 PgDn then G. Each run here starts
with an empty cache, waits for the first rows, presses 0 to 12 keys drawn from PgDn, PgUp, G, g,
↑ and ↓ with pauses of 0 to 300 ms, then q (or Ctrl-C); it must exit with status 0 (130 after Ctrl-C) within 10 s,
with the terminal sane. A failure prints the seed that reproduces it.

It prints the figures: runs, how long q took to end the process (median and worst), and nginx's
request count. nginx must be on PATH (apt-get install nginx); it runs in the foreground as the
current user on a free port of 127.0.0.1, serving a generated tree.
"""
import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from nginxlib import Nginx
from test_browse_remote import make_tree
from tmuxlib import Tmux, exited, fail, terminal_is_sane

KEYS = ["PageDown", "PageDown", "PageDown", "PageUp", "G", "g", "Down", "Up"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bin")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=None)
    options = parser.parse_args()
    if shutil.which("nginx") is None:
        fail("nginx is required (apt-get install nginx)")
    browse = os.path.join(options.bin, "browse")
    seed = options.seed if options.seed is not None else random.randrange(1 << 30)
    work = tempfile.mkdtemp(prefix="avenues-stress-")
    os.chmod(work, 0o755)
    tmux = Tmux()
    server = None
    quit_times = []
    try:
        tree = os.path.join(work, "tree")
        make_tree(tree)
        server = Nginx(tree, work)
        for run in range(options.runs):
            run_seed = seed + run
            chooser = random.Random(run_seed)
            cache = os.path.join(work, f"cache-{run}")
            name = f"r{run}"
            tmux.start(name, f"{browse} {server.url} --cache {cache}; echo EXIT=$?; stty -a; sleep 120")
            tmux.wait(name, f"run {run} (seed {run_seed}) shows rows", lambda s: len(s) >= 40 and " of " in s[-1] and s[2].strip() != "")
            keys = [chooser.choice(KEYS) for _ in range(chooser.randrange(13))]
            for key in keys:
                tmux.keys(name, key)
                time.sleep(chooser.uniform(0, 0.3))
            ending = "q" if chooser.random() < 0.8 else "C-c"
            asked = time.monotonic()
            tmux.keys(name, ending)
            screen = tmux.wait(name, f"run {run} (seed {run_seed}, keys {keys + [ending]}) ends", exited, deadline=10)
            quit_times.append(time.monotonic() - asked)
            terminal_is_sane(tmux, name, screen, f"browse (run {run}, seed {run_seed}, keys {keys + [ending]})",
                             status=0 if ending == "q" else 130)
            tmux.run("kill-session", "-t", name, check=False)
            shutil.rmtree(cache, ignore_errors=True)
        quit_ms = sorted(int(t * 1000) for t in quit_times)
        print(f"ok: {options.runs} cold runs of browse URL against nginx (seed {seed}): no hang, no crash; "
              f"q or Ctrl-C ended the process in {statistics.median(quit_ms)} ms median, {quit_ms[-1]} ms at worst "
              f"(as seen by polling the screen every 20 ms); nginx answered {server.requests()} requests")
    finally:
        tmux.close()
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
