#!/usr/bin/env python3
"""Runs `browse` in a real terminal (a detached 120x40 tmux session) and checks what a user sees.

Usage: test_browse_in_tmux.py BIN_DIR   (the folder holding the built `browse`)

- 2,000 generated files; `browse` starts with a fresh disk cache and 25 ms of latency per file;
- placeholders (spinners) are seen before values, then the first screen fills;
- after PgDn x5, G and g, the visible rows show values; after G the status line counts cancellations;
- q and Ctrl-C exit with status 0 and leave the terminal sane (icanon, echo, isig; cursor shown;
  main screen); a resize redraws at the new size.
Every wait polls `tmux capture-pane` against a deadline; nothing sleeps "long enough".
"""
import os
import re
import shutil
import sys
import tempfile

from tmuxlib import Tmux, exited, fail, terminal_is_sane

SPINNER = set("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
COMPUTED = re.compile(r"\s\d+\s\s[0-9a-f]{8}\s")  # LINES then CRC32 columns


def table_rows(screen):
    """The table rows on a browse screen: everything between the two header lines and the status line."""
    return [line for line in screen[2:-1] if line.strip()]


def all_computed(screen):
    rows = table_rows(screen)
    return len(rows) > 0 and all(COMPUTED.search(row) for row in rows)


def status_number(screen, label):
    match = re.search(label + r" (\d+)", screen[-1])
    return int(match.group(1)) if match else None


def make_files(root, count):
    for index in range(count):
        folder = os.path.join(root, f"dir{index % 25:02d}")
        os.makedirs(folder, exist_ok=True)
        if index % 10 == 0:
            with open(os.path.join(folder, f"blob{index:04d}.bin"), "wb") as file:
                file.write(bytes((index * 7 + n * 13) % 256 for n in range(1500 + index)))
        else:
            with open(os.path.join(folder, f"note{index:04d}.txt"), "w") as file:
                file.write("".join(f"line {n} of file {index}\n" for n in range(index % 40 + 1)))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if shutil.which("tmux") is None:
        fail("tmux is required for the terminal test but is not installed (apt-get install tmux)")
    browse = os.path.join(sys.argv[1], "browse")
    if not os.access(browse, os.X_OK):
        fail(f"{browse} is not built")

    work = tempfile.mkdtemp(prefix="avenues-browse-")
    tmux = Tmux()
    try:
        files = os.path.join(work, "files")
        make_files(files, 2000)
        cache = os.path.join(work, "cache")
        # 120 rows ahead at 25 ms each on 6 workers: look-ahead is still queued when G jumps away.
        command = f"{browse} {files} --cache {cache} --latency 25 --ahead 120; echo EXIT=$?; stty -a; sleep 120"

        # First screen: placeholders, then values.
        tmux.start("b", command)
        saw_placeholder = tmux.wait("b", "spinners show on unloaded rows",
                                    lambda s: len(s) >= 40 and any(ch in SPINNER for row in table_rows(s) for ch in row))
        if all_computed(saw_placeholder):
            fail("values were shown before any placeholder", saw_placeholder)
        screen = tmux.wait("b", "the first screen shows computed values", all_computed)
        print(f"ok: placeholders first, then {len(table_rows(screen))} rows of values")

        for step in range(5):
            tmux.keys("b", "PageDown")
            screen = tmux.wait("b", f"PgDn #{step + 1} shows values", lambda s, n=step: all_computed(s) and s[-1].lstrip().startswith(f"{37 * (n + 1) + 1}–"))
        print("ok: PgDn x5, each screen filled:", screen[-1].split("│")[0].strip())

        tmux.keys("b", "G")
        screen = tmux.wait("b", "G shows the last rows with values", lambda s: all_computed(s) and " of 2000" in s[-1] and s[-1].lstrip().startswith("1964–"))
        cancelled = status_number(screen, "cancelled")
        if not cancelled:
            fail("the status line reports no cancellations after the jump to the end", screen)
        print(f"ok: G jumped to the end; {cancelled} loads cancelled")

        tmux.keys("b", "g")
        screen = tmux.wait("b", "g shows the first rows with values", lambda s: all_computed(s) and s[-1].lstrip().startswith("1–37 "))
        print("ok: g back to the top")

        tmux.run("resize-window", "-t", "b", "-x", "90", "-y", "25")
        screen = tmux.wait("b", "the screen is redrawn at 90x25", lambda s: len(s) == 25 and s[-1].lstrip().startswith("1–22 ") and all_computed(s))
        print("ok: resized to 90x25 and redrawn")

        tmux.keys("b", "q")
        screen = tmux.wait("b", "browse exits after q", exited)
        terminal_is_sane(tmux, "b", screen, "browse")
        print("ok: q exits and the terminal is sane")

        # Ctrl-C, with the disk cache now warm: the first screen comes from disk.
        tmux.start("c", command)
        screen = tmux.wait("c", "the warm first screen shows values", lambda s: len(s) >= 40 and all_computed(s))
        hits = re.search(r"disk (\d+)", screen[-1])
        if not hits or int(hits.group(1)) == 0:
            fail("a second run found nothing in the disk cache", screen)
        tmux.keys("c", "C-c")
        screen = tmux.wait("c", "browse exits after Ctrl-C", exited)
        terminal_is_sane(tmux, "c", screen, "browse")
        print(f"ok: second run served {hits.group(1)} rows from the disk cache; Ctrl-C exits cleanly")
    finally:
        tmux.close()
        shutil.rmtree(work, ignore_errors=True)
    print("browse terminal test passed")


if __name__ == "__main__":
    main()
