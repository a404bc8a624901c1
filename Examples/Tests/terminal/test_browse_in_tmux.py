#!/usr/bin/env python3
"""Runs `browse` in a real terminal (a detached 120x40 tmux session) and checks what a user sees.

Usage: test_browse_in_tmux.py BIN_DIR   (the folder holding the built `browse`)

- 2,000 generated files in 25 folders (folder rows too); `browse` starts with a fresh disk cache
  and 25 ms of latency per file;
- placeholders (spinners) are seen before values, then the first screen fills;
- after PgDn x5, G and g, the visible rows show values; after G the status line counts cancellations;
- `?` shows the keys and any key closes them; `s` sorts by size (largest first) and back by path;
- q exits with status 0, Ctrl-C with 130 (as shells expect of an interrupted command), both leave the terminal sane (icanon, echo, isig; cursor shown;
  main screen); a resize redraws at the new size, at 30 and 8 columns no row wraps (and at 30x12 the keys scroll), and 2 rows show a row and the status line;
- every signal that ends the process (SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE)
  leaves the terminal sane too;
- a folder whose name holds escape sequences (`ESC]2;PWNED BEL`, `ESC[2J`) neither retitles nor
  clears the terminal.
Every wait polls `tmux capture-pane` against a deadline; nothing sleeps "long enough".
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from tmuxlib import Tmux, exited, fail, terminal_is_sane

SPINNER = set("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
COMPUTED = re.compile(r"\s\d+\s\s[0-9a-f]{8}\s")  # LINES then CRC32 columns


def table_rows(screen):
    """The file rows on a browse screen: between the two header lines and the status line, without
    folder rows (whose path ends with "/" and which have nothing computed)."""
    return [line for line in screen[2:-1] if line.strip() and not line.split()[0].endswith("/")]


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
        screen = tmux.wait("b", "G shows the last rows with values", lambda s: all_computed(s) and " of 2025" in s[-1] and s[-1].lstrip().startswith("1989–"))
        cancelled = status_number(screen, "cancelled")
        if not cancelled:
            fail("the status line reports no cancellations after the jump to the end", screen)
        print(f"ok: G jumped to the end; {cancelled} loads cancelled")

        tmux.keys("b", "g")
        screen = tmux.wait("b", "g shows the first rows with values", lambda s: all_computed(s) and s[-1].lstrip().startswith("1–37 "))
        print("ok: g back to the top")

        tmux.keys("b", "?")
        screen = tmux.wait("b", "? shows the keys", lambda s: any("these keys" in line for line in s) and any("sort by" in line for line in s))
        tmux.keys("b", "x")
        screen = tmux.wait("b", "any key closes the keys", lambda s: all_computed(s) and not any("these keys" in line for line in s))
        print("ok: ? shows the keys, any key closes them")

        tmux.keys("b", "s")
        # The selection stays on its row (dir00/, a folder: last by size); g goes to the top.
        tmux.wait("b", "s sorts by size, keeping the selected row", lambda s: "by size" in s[0] and any(line.startswith("dir00/") for line in s) and s[-1].lstrip().startswith("1989–"))
        tmux.keys("b", "g")
        screen = tmux.wait("b", "g shows the largest files", lambda s: "by size" in s[0] and all_computed(s) and s[-1].lstrip().startswith("1–"))
        largest = table_rows(screen)[0].split()[0]
        if largest != "dir15/blob1990.bin":
            fail(f"sorted by size, the first row is {largest}, not the largest file dir15/blob1990.bin", screen)
        tmux.keys("b", "s")
        tmux.wait("b", "s sorts by lines", lambda s: "by lines" in s[0])
        tmux.keys("b", "s")
        tmux.wait("b", "s sorts by path again, keeping the selected file", lambda s: "by " not in s[0] and any(line.startswith(largest) for line in s))
        tmux.keys("b", "g")
        screen = tmux.wait("b", "g shows the first folder", lambda s: s[2].split()[0] == "dir00/" and all_computed(s))
        print("ok: s sorts by size (largest first), then lines, then path again")

        tmux.keys("b", "/", "blob19")
        screen = tmux.wait("b", "typing /blob19 filters the paths to its 10 files, each summarized",
                           lambda s: "“blob19”: 10 of " in s[0] and len(table_rows(s)) == 10 and all_computed(s)
                           and all("blob19" in row.split()[0] for row in table_rows(s)))
        tmux.keys("b", "Enter", "Escape")
        tmux.wait("b", "Esc clears the filter", lambda s: "“blob19”" not in s[0] and "filter cleared" in s[-1] and len(table_rows(s)) > 10)
        tmux.keys("b", "g")
        tmux.wait("b", "g goes to the top", lambda s: s[-1].lstrip().startswith("1–") and all_computed(s))
        print("ok: / filters the paths as you type, only the matches are summarized, Esc clears it")

        tmux.run("resize-window", "-t", "b", "-x", "90", "-y", "25")
        screen = tmux.wait("b", "the screen is redrawn at 90x25", lambda s: len(s) == 25 and s[-1].lstrip().startswith("1–22 ") and all_computed(s))
        print("ok: resized to 90x25 and redrawn")

        # A narrow pane (seen 2026-11-27: every row, at least 43 columns, wrapped onto the next line
        # and pushed the heading off the screen): rows fit, the path and the size stay.
        tmux.run("resize-window", "-t", "b", "-x", "30", "-y", "12")
        screen = tmux.wait("b", "the screen is redrawn at 30x12 without a wrapped row",
                           lambda s: len(s) == 12 and s[0].startswith(" browse") and s[1].startswith("PATH")
                           and s[-1].lstrip().startswith("1–9 ") and any(re.search(r"\d B$|KiB$", line) for line in s[2:-1]))
        if any(len(line) > 30 for line in screen):
            fail("a line is wider than the 30-column terminal", screen)
        # The keys do not fit 9 rows (seen 2026-11-29: quit was cut, with no sign of more): they
        # scroll, their last row says so, and any other key closes them.
        tmux.keys("b", "?")
        tmux.wait("b", "? on 9 rows shows the first keys and says there are more", lambda s: any(line.startswith("  keys 1–") for line in s))
        tmux.keys("b", "G")
        tmux.wait("b", "G shows the last keys, quit among them", lambda s: any("quit" in line for line in s[2:-1]) and any(line.startswith("  keys ") for line in s))
        tmux.keys("b", "x")
        tmux.wait("b", "x closes the keys", lambda s: not any(line.startswith("  keys ") for line in s) and any(re.search(r"\d B$|KiB$", line) for line in s[2:-1]))
        tmux.run("resize-window", "-t", "b", "-x", "8", "-y", "6")
        tmux.wait("b", "the screen is redrawn at 8x6, every line cut", lambda s: len(s) == 6 and s[0].startswith(" brow") and s[-1].startswith(" 1–"))
        # Shorter than heading, titles, a row and the status line: a frame of more lines than the
        # terminal holds scrolled it up at every frame; the heading and the titles make room.
        tmux.run("resize-window", "-t", "b", "-x", "40", "-y", "2")
        tmux.wait("b", "the screen is redrawn at 40x2 as a row and the status line",
                  lambda s: len(s) == 2 and not s[0].startswith((" browse", "PATH")) and re.match(r"\s*\d+ of ", s[1]))
        tmux.run("resize-window", "-t", "b", "-x", "90", "-y", "25")
        tmux.wait("b", "the screen is redrawn at 90x25 again", lambda s: len(s) == 25 and s[-1].lstrip().startswith("1–22 ") and all_computed(s))
        print("ok: at 30x12 rows show their path and size without wrapping; at 8x6 every line is cut; at 40x2 a row and the status line")

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
        terminal_is_sane(tmux, "c", screen, "browse", status=130)
        print(f"ok: second run served {hits.group(1)} rows from the disk cache; Ctrl-C exits cleanly, status 130")

        # Every signal that ends the process gives the terminal back (seen 2026-11-23: SIGUSR1,
        # SIGALRM and SIGPIPE left the alternate screen and a hidden cursor; the first SIGQUIT was
        # swallowed).
        for number, name in enumerate(["TERM", "HUP", "QUIT", "USR1", "USR2", "ALRM", "PIPE"]):
            session = f"s{number}"
            tmux.start(session, command)
            tmux.wait(session, f"browse is up before SIG{name}", lambda s: len(s) >= 40 and all_computed(s))
            shell = tmux.display(session, "#{pane_pid}")
            pid = subprocess.run(["pgrep", "-P", shell, "-x", "browse"], capture_output=True, text=True).stdout.split()
            if len(pid) != 1:
                fail(f"could not find browse under the shell {shell}: {pid}")
            os.kill(int(pid[0]), getattr(signal, "SIG" + name))
            screen = tmux.wait(session, f"browse ends on SIG{name}", exited)
            terminal_is_sane(tmux, session, screen, f"browse after SIG{name}", status=None)
        print("ok: SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM and SIGPIPE each leave the terminal sane")

        # A name from outside never reaches the terminal as a sequence.
        hostile = os.path.join(work, "t\x1b]2;PWNED\x07\x1b[2J")
        os.makedirs(os.path.join(hostile, "in\x1b]2;PWNED\x07side"))
        with open(os.path.join(hostile, "in\x1b]2;PWNED\x07side", "f\x1b[2Jile.txt"), "w") as file:
            file.write("hello\n")
        tmux.start("h", f"{browse} '{hostile}' --no-cache; echo EXIT=$?; stty -a; sleep 120")
        screen = tmux.wait("h", "the hostile folder is shown", lambda s: len(s) >= 40 and any("ile.txt" in line and "hello" in line for line in s))
        title = tmux.display("h", "#{pane_title}")
        if "PWNED" in title:
            fail(f"a name retitled the terminal: {title!r}", screen)
        if not any(line.startswith(" browse") for line in screen[:1]):
            fail("the heading is gone: a name cleared the screen", screen)
        tmux.keys("h", "q")
        screen = tmux.wait("h", "browse exits after q", exited)
        terminal_is_sane(tmux, "h", screen, "browse")
        print(f"ok: names with escape sequences are shown cleaned (title stays {title!r})")
    finally:
        tmux.close()
        shutil.rmtree(work, ignore_errors=True)
    print("browse terminal test passed")


if __name__ == "__main__":
    main()
