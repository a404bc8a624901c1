#!/usr/bin/env python3
"""Runs `pages FILE` in a real terminal (a detached 120x40 tmux session) on a generated file of
300,000 lines (~25 MB) and checks what a user sees.

Usage: test_pages_file_in_tmux.py BIN_DIR   (the folder holding the built `pages`)

- the first screen shows lines 1–38, numbered, and the count becomes exact (300000);
- G shows line 300000 at the bottom; g goes back; `:150000` puts line 150000 at the top; a `:`
  that is not a number says so;
- `/needle` finds the one line that says so (line 287,654), `n` says there is no other after it,
  `/NEEDLE` (capitals: exact case) finds nothing;
- → scrolls sideways; `?` lists the keys;
- F follows the end while another process appends 2,000 lines: line 302000 shows at the bottom;
- an escape sequence in a line neither retitles nor clears the terminal;
- q exits with status 0 and ^C with 130, leaving the terminal sane; piped, the file comes out byte for byte;
  a file deleted while open stays readable; `--filter TEXT` piped prints only the lines (of a file)
  or the rows (of a folder) that contain it;
- `cat FILE | pages` pages standard input (keys from the terminal), read as far as the screen goes:
  at most 5 MB of it before G, which reads it to its end; `yes | pages` shows its first screen and
  keeps 4 MiB; the copy in TMPDIR is deleted on q; `pages -` piped prints standard input as it is;
  `pages < FILE` pages the file in place (no copy, counted exactly); one read partly is paged from
  where it is; `pages <(cmd)` and `pages FIFO` page the named pipe as it comes, under its name; a
  file that is one 100 GB line shows its start at once and quits at once after G; SIGHUP and
  SIGXFSZ ignored when pages starts stay ignored.
"""
import errno
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from tmuxlib import Tmux, exited, fail, terminal_is_sane

LINES = 300_000
NEEDLE = 287_654  # 1-based


def numbers(screen):
    """The line numbers of the rows shown (the heading and the status line left out)."""
    found = []
    for row in screen[1:-1]:
        match = re.match(r"\s*(\d+) ", row)
        if match:
            found.append(int(match.group(1)))
    return found


def main():
    bin_dir = sys.argv[1]
    pages = os.path.join(bin_dir, "pages")
    work = tempfile.mkdtemp(prefix="pages-file-")
    path = os.path.join(work, "big.log")
    with open(path, "w") as out:
        for n in range(1, LINES + 1):
            if n == NEEDLE:
                out.write(f"{n} here is the needle\n")
            elif n == 1000:
                out.write(f"{n} \x1b]0;retitled\x07\x1b[2J\x1b[31mred\n")
            else:
                out.write(f"{n} GET /index.html?q={'x' * (n % 97)} HTTP/1.1 200\n")

    # Piped: the bytes as they are.
    copied = subprocess.run([pages, path], capture_output=True, check=True).stdout
    with open(path, "rb") as file:
        if copied != file.read():
            fail("piped, pages did not print the file as it is")

    # Piped with --filter: only the lines that contain the text, in order (smart case), also across
    # the 1 MiB reads and for a last line without a break.
    with open(path, "rb") as file:
        data = file.read()
    for text in ["needle", "x" * 90, "HTTP/1.1 200", "Here", "1000 "]:
        got = subprocess.run([pages, path, "--filter", text], capture_output=True, check=True).stdout
        lines = data.split(b"\n")[:-1]
        want = b"".join(line + b"\n" for line in lines if (text.encode() in line if any(c.isupper() for c in text) else text.lower().encode() in line.lower()))
        if got != want:
            fail(f"pages --filter {text!r} printed {len(got.splitlines())} lines, not the {len(want.splitlines())} that contain it")
    tail = os.path.join(work, "tail.txt")
    with open(tail, "wb") as file:
        file.write(b"a\nneedle here\nb\nlast needle")
    got = subprocess.run([pages, tail, "--filter", "NEEDLE"], capture_output=True, check=True).stdout
    if got != b"":
        fail(f"--filter NEEDLE (capitals: exact case) printed {got!r}")
    got = subprocess.run([pages, tail, "--filter", "needle"], capture_output=True, check=True).stdout
    if got != b"needle here\nlast needle\n":
        fail(f"--filter needle on a file without a final break printed {got!r}")
    got = subprocess.run([pages, work, "--filter", "TAIL", "--format", "tsv", "--no-cache"], capture_output=True, check=True).stdout.decode()
    if [row.split("\t")[0] for row in got.splitlines()[1:]] != []:
        fail(f"pages FOLDER --filter TAIL (exact case) listed {got!r}")
    got = subprocess.run([pages, work, "--filter", "tail", "--format", "tsv", "--no-cache"], capture_output=True, check=True).stdout.decode()
    if [row.split("\t")[:3] for row in got.splitlines()[1:]] != [["tail.txt", "27", "3"]]:
        fail(f"pages FOLDER --filter tail listed {got!r}")

    # Piped in and out (`pages -`): standard input comes out as it is, --filter too.
    got = subprocess.run([pages, "-"], input=data, capture_output=True, check=True).stdout
    if got != data:
        fail("pages - piped did not print standard input as it is")
    got = subprocess.run([pages, "-", "--filter", "needle"], input=data, capture_output=True, check=True).stdout
    if got != f"{NEEDLE} here is the needle\n".encode():
        fail(f"pages - --filter needle printed {got[:200]!r}")

    tmux = Tmux()
    try:
        # `cmd | pages`: standard input paged, the keys read from the terminal. The whole 25 MB
        # file comes through the pipe: G reads on to its end. Its copy is kept in TMPDIR, a folder
        # of this test's, and deleted when the pager ends.
        spools = os.path.join(work, "spools")
        os.makedirs(spools)
        def spool_sizes():
            return [os.path.getsize(os.path.join(spools, f)) for f in os.listdir(spools) if f.startswith("pages-input.")]
        tmux.start("in", f"cat '{path}' | TMPDIR='{spools}' '{pages}'; echo EXIT=$?; stty -a; sleep 120")
        tmux.wait("in", "the first screen of standard input shows lines 1–38, counted as at least",
                  lambda s: numbers(s)[:1] == [1] and len(numbers(s)) == 38 and "(standard input)" in s[0] and " of ≥ " in s[-1])
        if not spool_sizes() or max(spool_sizes()) > 5 << 20:
            fail(f"standard input was read past what the screen needs: {spool_sizes()} bytes kept", tmux.screen("in"))
        tmux.keys("in", "G")
        tmux.wait("in", f"G reads standard input to its end: line {LINES} at the bottom, counted exactly",
                  lambda s: numbers(s)[-1:] == [LINES] and f"of {LINES} " in s[-1])
        tmux.keys("in", "q")
        terminal_is_sane(tmux, "in", tmux.wait("in", "pages exits", exited), "pages")
        if spool_sizes():
            fail(f"the copy of standard input was left in TMPDIR: {os.listdir(spools)}")
        # `pages < FILE`: the file itself is paged, no copy made; counted exactly from the start.
        tmux.start("redirected", f"TMPDIR='{spools}' '{pages}' < '{path}'; echo EXIT=$?; stty -a; sleep 120")
        tmux.wait("redirected", "pages < FILE shows standard input's first screen and its exact count",
                  lambda s: numbers(s)[:1] == [1] and "(standard input)" in s[0] and f"of {LINES} " in s[-1])
        tmux.keys("redirected", "G")
        tmux.wait("redirected", f"G on pages < FILE shows line {LINES} at the bottom", lambda s: numbers(s)[-1:] == [LINES])
        if spool_sizes():
            fail(f"pages < FILE copied the file to TMPDIR: {spool_sizes()} bytes", tmux.screen("redirected"))
        tmux.keys("redirected", "q")
        terminal_is_sane(tmux, "redirected", tmux.wait("redirected", "pages < FILE exits", exited), "pages")
        # A named pipe — `pages <(cmd)`'s /dev/fd/63, a FIFO — is paged as it comes, as standard
        # input is, under its name (it said "/dev/fd/63 is not a regular file", where less pages it).
        tmux.start("substituted", f"bash -c \"TMPDIR='{spools}' '{pages}' <(cat '{path}'); echo EXIT=\\$?; stty -a; sleep 120\"")
        tmux.wait("substituted", "pages <(cmd) shows the first screen under its /dev/fd name",
                  lambda s: numbers(s)[:1] == [1] and len(numbers(s)) == 38 and "/dev/fd/" in s[0] and " of ≥ " in s[-1])
        tmux.keys("substituted", "G")
        tmux.wait("substituted", f"G on pages <(cmd) reads it to line {LINES}", lambda s: numbers(s)[-1:] == [LINES] and f"of {LINES} " in s[-1])
        tmux.keys("substituted", "q")
        terminal_is_sane(tmux, "substituted", tmux.wait("substituted", "pages <(cmd) exits", exited), "pages")
        if spool_sizes():
            fail(f"the copy of a named pipe was left in TMPDIR: {os.listdir(spools)}")
        fifo = os.path.join(work, "named.fifo")
        os.mkfifo(fifo)
        tmux.start("fifo", f"TMPDIR='{spools}' '{pages}' '{fifo}'; echo EXIT=$?; stty -a; sleep 120")
        # pages waits for a writer, as less does, and says so (the terminal stayed blank); the
        # writer waits (a bounded time) for pages.
        tmux.wait("fifo", "pages FIFO says it waits for a writer",
                  lambda s: any(f"pages: waiting for a program to write to {fifo} (Ctrl-C stops)" in line for line in s))
        deadline = time.monotonic() + 30
        while True:
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as error:
                if error.errno != errno.ENXIO or time.monotonic() > deadline:
                    fail(f"pages FIFO never opened the pipe for reading ({error})", tmux.screen("fifo"))
                time.sleep(0.05)
        os.set_blocking(writer, True)
        os.write(writer, "".join(f"piped {n}\n" for n in range(1, 101)).encode())
        os.close(writer)
        tmux.wait("fifo", "pages FIFO shows what its writer wrote, counted once it closed",
                  lambda s: len(s) > 2 and "piped 1" in s[1] and "named.fifo" in s[0] and " of 100 " in s[-1])
        tmux.keys("fifo", "q")
        terminal_is_sane(tmux, "fifo", tmux.wait("fifo", "pages FIFO exits", exited), "pages")
        # A file read partly before pages starts is paged from where it is (a copy of the rest).
        tmux.start("partly", f"(read first; TMPDIR='{spools}' '{pages}') < '{path}'; echo EXIT=$?; stty -a; sleep 120")
        tmux.wait("partly", "a file read partly is paged from its second line",
                  lambda s: numbers(s)[:1] == [1] and len(s) > 2 and s[1].split()[1:2] == ["2"])
        tmux.keys("partly", "q")
        terminal_is_sane(tmux, "partly", tmux.wait("partly", "pages exits", exited), "pages")
        # A file that is one 100 GB line (sparse: nothing on disk): its start shows at once, cut,
        # and G's screen does not read it back on the keys' thread, so q quits at once.
        sparse = os.path.join(work, "one-line.bin")
        with open(sparse, "wb") as out:
            out.truncate(100 << 30)
        tmux.start("sparse", f"'{pages}' '{sparse}'; echo EXIT=$?; stty -a; sleep 120")
        tmux.wait("sparse", "the first row of a 100 GB line shows at once", lambda s: len(s) > 2 and s[1].lstrip().startswith("1 ?") and " of ≥ 1 " in s[-1])
        # `:50` past the rows known: its own rows, pending (it said "50–1 of ≥ 1").
        tmux.keys("sparse", ":", "5", "0", "Enter")
        tmux.wait("sparse", ":50 on a 100 GB line shows rows from 50 on", lambda s: re.search(r" 50–(\d+) of ≥ 1 ", s[-1]) is not None
                  and int(re.search(r" 50–(\d+) of", s[-1]).group(1)) > 50)
        tmux.keys("sparse", "G")
        tmux.keys("sparse", "q")
        terminal_is_sane(tmux, "sparse", tmux.wait("sparse", "pages quits from G on a 100 GB line", exited, deadline=10), "pages")
        os.remove(sparse)
        # An endless input costs what is looked at: the first screen, then q, at once.
        tmux.start("yes", f"yes 'an endless line' | TMPDIR='{spools}' '{pages}'; echo EXIT=$?; stty -a; sleep 120")
        tmux.wait("yes", "the first screen of an endless input", lambda s: len(s) > 2 and "an endless line" in s[1] and " of ≥ " in s[-1])
        # 4 MiB past what the screen asked for: 4.0 MiB, or a little more when a prefetch asked for
        # rows past the first screen (4.1 MiB, seen under load); at most 5, checked below.
        def paused(screen):
            read = re.search(r"(\d+\.\d) MiB read", screen[-1])
            return read is not None and 4.0 <= float(read.group(1)) <= 5.0
        tmux.wait("yes", "the copy pauses at what the screen needs", paused)
        if max(spool_sizes()) > 5 << 20:
            fail(f"an endless input was read on: {spool_sizes()} bytes kept", tmux.screen("yes"))
        tmux.keys("yes", "q")
        terminal_is_sane(tmux, "yes", tmux.wait("yes", "pages exits from an endless input", exited), "pages")
        # `pages -` typed at a terminal: its standard input gives keys, not text.
        tmux.start("tty", f"'{pages}' -; echo EXIT=$?; sleep 120")
        tmux.wait("tty", "pages - on a terminal says what to do and exits 1",
                  lambda s: any("pipe a command into pages" in line for line in s) and any(line.startswith("EXIT=1") for line in s))
        print(f"ok: cmd | pages pages standard input (G reads it to line {LINES}); pages < FILE pages it in place; pages <(cmd) and pages FIFO page the pipe; yes | pages keeps 4 MiB; the copy is deleted; pages - at a terminal says what to do")

        name = "pages"
        tmux.start(name, f"'{pages}' '{path}'; echo EXIT=$?; stty -a; sleep 120")
        screen = tmux.wait(name, "the first screen shows lines 1–38 and the exact count",
                           lambda s: numbers(s)[:1] == [1] and len(numbers(s)) == 38 and f"of {LINES}" in s[-1])
        if "retitled" in tmux.display(name, "#{pane_title}"):
            fail("a line's escape sequence retitled the terminal", screen)

        tmux.keys(name, "G")
        tmux.wait(name, f"G shows line {LINES} at the bottom", lambda s: numbers(s)[-1:] == [LINES])
        tmux.keys(name, "g")
        tmux.wait(name, "g shows line 1 again", lambda s: numbers(s)[:1] == [1])
        tmux.keys(name, ":", "1", "5", "0", "0", "0", "0", "Enter")
        tmux.wait(name, ":150000 puts line 150000 at the top", lambda s: numbers(s)[:1] == [150_000])
        tmux.keys(name, ":", "x", "Enter")  # not a digit: ignored, then Enter on an empty line
        # More digits than an Int holds: as far as any number, the last line (it said "not a line
        # number" before), as :N past the end does.
        tmux.keys(name, ":", *("9" * 30), "Enter")
        tmux.wait(name, f"a 30-digit :N shows line {LINES} at the bottom", lambda s: numbers(s)[-1:] == [LINES] and f"there are {LINES} lines" in s[-1])
        tmux.keys(name, "g", "/", "n", "e", "e", "d", "l", "e", "Enter")
        screen = tmux.wait(name, f"/needle finds line {NEEDLE}", lambda s: f"at line {NEEDLE}" in s[-1])
        if not any("here is the needle" in row for row in screen[1:-1]):
            fail("the line found is not on the screen", screen)
        tmux.keys(name, "n")
        tmux.wait(name, "n says there is no other", lambda s: "not found after this line" in s[-1])
        tmux.keys(name, "g", "/", "N", "E", "E", "D", "L", "E", "Enter")
        tmux.wait(name, "/NEEDLE (exact case) finds nothing", lambda s: "“NEEDLE” not found" in s[-1])

        tmux.keys(name, "g", "Right")
        screen = tmux.wait(name, "→ scrolls sideways", lambda s: "column 61" in s[-1])
        tmux.keys(name, "Left", "?")
        tmux.wait(name, "? lists the keys", lambda s: any(":N" in row and "go to line N" in row for row in s))
        tmux.keys(name, "q")  # closes the help

        tmux.keys(name, "F")
        tmux.wait(name, "F follows the end", lambda s: numbers(s)[-1:] == [LINES] and "following" in s[-1])
        with open(path, "a") as out:
            for n in range(LINES + 1, LINES + 2_001):
                out.write(f"{n} appended\n")
                if n % 100 == 0:
                    out.flush()
        tmux.wait(name, f"the appended lines show, to line {LINES + 2_000}", lambda s: numbers(s)[-1:] == [LINES + 2_000])
        # Probe of 2026-11-26: ^C while following quit the pager; like any key (and less's ^C in F),
        # it stops following and keeps the place.
        tmux.keys(name, "C-c")
        tmux.wait(name, "^C stops following and stays", lambda s: "following" not in s[-1] and numbers(s)[-1:] == [LINES + 2_000])

        os.unlink(path)
        screen = tmux.wait(name, "the deleted file is noticed", lambda s: "deleted" in s[-1])
        tmux.keys(name, ":", "1", "0", "0", "0", "Enter")
        screen = tmux.wait(name, "line 1000 of the deleted file is read", lambda s: numbers(s)[:1] == [1000])
        if "[2J" not in screen[1] or "?]0;retitled?" not in screen[1]:
            fail("the escape sequences of line 1000 are not shown as text", screen)
        tmux.keys(name, "q")
        screen = tmux.wait(name, "pages exits", exited)
        terminal_is_sane(tmux, name, screen, "pages")

        # ^C (not following) quits with status 130, as shells expect of an interrupted command; it
        # exited with 0, as q does.
        tmux.start("c", f"'{pages}' '{os.path.join(work, 'tail.txt')}'; echo EXIT=$?; stty -a; sleep 120")
        tmux.wait("c", "the short file shows", lambda s: numbers(s)[:1] == [1])
        tmux.keys("c", "C-c")
        terminal_is_sane(tmux, "c", tmux.wait("c", "pages exits after ^C", exited), "pages", status=130)

        # A signal ignored when pages starts stays ignored (seen 2026-11-29: under `nohup`, or a
        # test's `trap '' XFSZ`, pages put its own handler in and died of the signal): SIGHUP and
        # SIGXFSZ sent to it change nothing, and q still quits with 0.
        tmux.start("ignored", f"trap '' HUP XFSZ; '{pages}' '{os.path.join(work, 'tail.txt')}'; echo EXIT=$?; stty -a; sleep 120")
        tmux.wait("ignored", "the short file shows", lambda s: numbers(s)[:1] == [1])
        shell = tmux.display("ignored", "#{pane_pid}")
        found = subprocess.run(["pgrep", "-P", shell, "-x", "pages"], capture_output=True, text=True).stdout.split()
        if len(found) != 1:
            fail(f"could not find pages under the shell {shell}: {found}")
        for number in (signal.SIGHUP, signal.SIGXFSZ):
            os.kill(int(found[0]), number)
        # Keys sent after the signals are read: the process lives on.
        tmux.keys("ignored", ":", "3")
        tmux.wait("ignored", "pages goes on after SIGHUP and SIGXFSZ it was started ignoring", lambda s: s[-1].startswith(" :3"))
        tmux.keys("ignored", "Escape", "q")
        terminal_is_sane(tmux, "ignored", tmux.wait("ignored", "pages exits after q", exited), "pages")
        print("ok: SIGHUP and SIGXFSZ ignored at start stay ignored")
    finally:
        tmux.close()
        subprocess.run(["rm", "-rf", work])
    print("pages FILE in tmux: first screen, G, g, :N, search, sideways, F, ^C in F, deletion, escapes and q all as expected")


if __name__ == "__main__":
    main()
