#!/usr/bin/env python3
"""Runs `pages URL` where the URL names a file, not a folder, against Python's own `http.server`
(a server nobody here wrote), and checks what a user sees.

Usage: test_pages_remote_file.py BIN_DIR   (the folder holding the built `pages` and `browse`)

- piped, `pages URL/app.log` prints the file byte for byte, and `--filter TEXT` the lines that
  contain it, as `pages FILE --filter TEXT` does;
- a URL of a folder without its final `/` (`URL/logs`) still lists the folder; `browse URL/app.log`
  says to use pages;
- a URL that names neither a file nor a folder is one line on stderr (both answers) and status 1;
  a file larger than the download cache says so, and how to page it as it comes;
- in a terminal (tmux, 120x40): the heading names the URL, not the cache's file; the lines are
  numbered, G shows the last one, q exits with status 0 and leaves the terminal sane;
- with the server stopped, the file comes from the cache, byte for byte.

Before this, `pages URL/app.log` said "URL/app.log/ answered HTTP 404; give the URL of a folder
listing" (seen 2026-11-29).
"""
import os
import shutil
import sys
import tempfile

from test_browse_remote import Server
from tmuxlib import Tmux, exited, fail, terminal_is_sane
import subprocess

LINES = 50_000


def run(arguments, status=0):
    result = subprocess.run(arguments, capture_output=True, timeout=120)
    if result.returncode != status:
        fail(f"{' '.join(arguments)} exited with {result.returncode}, not {status}: {result.stderr.decode(errors='replace')}")
    return result


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if shutil.which("tmux") is None:
        fail("tmux is required for the remote file test (apt-get install tmux)")
    pages = os.path.join(sys.argv[1], "pages")
    work = tempfile.mkdtemp(prefix="avenues-remote-file-")
    tmux = Tmux()
    server = None
    try:
        tree = os.path.join(work, "tree")
        os.makedirs(os.path.join(tree, "logs"))
        log = os.path.join(tree, "app.log")
        with open(log, "wb") as out:
            for n in range(1, LINES + 1):
                out.write(f"{n} {'ERROR disk' if n % 997 == 0 else 'INFO fine'} \xe9t\xe9\n".encode())
        with open(os.path.join(tree, "logs", "today.txt"), "w") as out:
            out.write("one\ntwo\n")
        server = Server(tree, os.path.join(work, "server.log"))
        cache = os.path.join(work, "cache")
        url = server.url + "app.log"

        with open(log, "rb") as original:
            expected = original.read()
        if run([pages, url, "--cache", cache]).stdout != expected:
            fail("pages URL | cat differs from the file served")
        matches = run([pages, url, "--cache", cache, "--filter", "ERROR"]).stdout
        if matches != run([pages, log, "--filter", "ERROR"]).stdout or len(matches.splitlines()) != LINES // 997:
            fail(f"pages URL --filter ERROR differs from pages FILE --filter ERROR:\n{matches[:500]!r}")
        print(f"ok: pages URL of a file, piped, prints its {len(expected)} bytes, and with --filter its {LINES // 997} matching lines")

        told = run([os.path.join(sys.argv[1], "browse"), url, "--cache", cache], status=1).stderr.decode()
        if f"to read the file at {url}, use pages URL" not in told:
            fail(f"browse URL of a file did not point to pages: {told!r}")
        print(f"ok: browse URL of a file points to pages: {told.strip()}")

        folder = run([pages, server.url + "logs", "--cache", cache, "--width", "100"]).stdout.decode()
        if "today.txt" not in folder or "PATH" not in folder:
            fail(f"pages URL of a folder without its final / did not list it:\n{folder}")
        print("ok: pages URL of a folder without its final / lists the folder")

        missing = run([pages, server.url + "missing.txt", "--cache", cache], status=1)
        message = missing.stderr.decode()
        if "missing.txt answered HTTP 404" not in message or "missing.txt/ HTTP 404" not in message or len(message.splitlines()) != 1:
            fail(f"a URL of nothing did not say so in one line: {message!r}")
        print(f"ok: a URL of nothing is one line: {message.strip()}")

        # Larger than the download cache (512 MiB): refused from its Content-Length, with the way
        # to page it as it comes.
        with open(os.path.join(tree, "huge.bin"), "wb") as out:
            out.truncate(512 * 1024 * 1024 + 1)
        huge = run([pages, server.url + "huge.bin", "--cache", cache], status=1).stderr.decode()
        if "larger than the 512.0 MiB the download cache holds" not in huge or "| pages" not in huge:
            fail(f"a file larger than the cache did not say so: {huge!r}")
        print(f"ok: a file larger than the cache says so: {huge.strip()}")

        tmux.start("file", f"{pages} {url} --cache {cache}; echo EXIT=$?; stty -a; sleep 120", width=120, height=40)
        screen = tmux.wait("file", "the first screen shows the file under its URL",
                           lambda s: url in s[0] and s[1].strip().startswith("1 1 INFO fine"))
        if cache in "\n".join(screen):
            fail("the screen shows the cache's file, not the URL", screen)
        tmux.keys("file", "G")
        tmux.wait("file", f"G shows line {LINES}", lambda s: any(row.strip().startswith(f"{LINES} {LINES} ") for row in s[1:-1]))
        tmux.keys("file", "q")
        screen = tmux.wait("file", "pages exits", exited)
        terminal_is_sane(tmux, "file", screen, "pages URL")
        print(f"ok: in a terminal, the heading names the URL, G shows line {LINES}, q leaves the terminal as it was")

        server.stop()
        server = None
        if run([pages, url, "--cache", cache]).stdout != expected:
            fail("with the server stopped, pages URL did not print the cached file")
        print("ok: with the server stopped, the file comes from the cache")
    finally:
        tmux.close()
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("remote file test passed")


if __name__ == "__main__":
    main()
