#!/usr/bin/env python3
"""Runs `browse` and `pages` on an HTTP folder index served by Python's own `http.server` (a server
nobody here wrote) over a generated tree of 2,100 files in nested folders, and checks what a user
sees.

Usage: test_browse_remote.py BIN_DIR   (the folder holding the built `browse` and `pages`)

- `pages URL` and `browse URL`, piped, print exactly what they print for the same folder on disk;
- in a terminal (tmux, 120x40): the first screen fills (from a cold cache), PgDn shows the next
  screen, and only the rows of the screens shown plus the prefetch window are downloaded (counted
  in the server's log); G reaches the last file once the crawl has counted every file, downloading
  only the last screen and the window around it (seen 2026-11-23: a cold G fetched a third of the
  tree); q restores the terminal;
- with the server stopped, a second run shows the same first screen at once from the caches; rows
  never downloaded say "offline", the status line says the server is unreachable, nothing hangs;
  G shows the last screen from the cache (seen 2026-11-23: "not downloaded before");
- `/file 20` in a terminal from a cold cache filters the whole tree by path while the crawl lists it:
  the 100 matches, scattered over every folder, fill the screen; only matching files download; Esc
  shows every row again at the selected file; `pages URL --filter`, piped, prints what `pages DIR
  --filter` does;
- a port nobody listens on is one line on stderr and exit status 1.

It prints the figures: the first screen's time cold and warm, and the files and bytes downloaded
for three screens.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.parse

from tmuxlib import Tmux, exited, fail, terminal_is_sane

FILES = 2_100
SCREEN_ROWS = 37  # 40 lines: the title, the column header and the status line


def make_tree(root):
    """Nested folders, names that need encoding (spaces, '#', '%', non-ASCII), text and binary."""
    for index in range(FILES):
        parts = [f"dir {index % 11}", f"sub{index % 5}"] + ([f"deep#{index % 3}"] if index % 4 == 0 else [])
        folder = os.path.join(root, *parts)
        os.makedirs(folder, exist_ok=True)
        name = f"file {index:04d}" + ("%.bin" if index % 13 == 0 else (".tëxt" if index % 7 == 0 else ".txt"))
        with open(os.path.join(folder, name), "wb") as file:
            if index % 13 == 0:
                file.write(bytes((index * 7 + n * n) % 256 for n in range(300 + index)))
            else:
                file.write("".join(f"line {n} of {index}\n" for n in range(index % 17)).encode())


def run(arguments):
    result = subprocess.run(arguments, capture_output=True, timeout=300)
    if result.returncode != 0:
        fail(f"{' '.join(arguments)} exited with {result.returncode}: {result.stderr.decode(errors='replace')}")
    return result.stdout


class Server:
    """`python3 -m http.server` on a free port of 127.0.0.1, its log kept."""

    def __init__(self, root, log):
        self.log = log
        self.process = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", root],
            stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
        line = self.process.stdout.readline()
        match = re.search(r"port (\d+)", line)
        if not match:
            fail(f"http.server did not say its port: {line!r}")
        self.url = f"http://127.0.0.1:{match.group(1)}/"

    def file_requests(self):
        """The files (not folders) asked for, from the log."""
        with open(self.log) as log:
            paths = re.findall(r'"GET (\S+) HTTP', log.read())
        return [urllib.parse.unquote(path) for path in paths if not path.endswith("/")]

    def stop(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def filled(screen):
    """Every table row has its summary (a CRC-32 or a failure), none pending; folder rows
    (`path/`) have nothing to compute."""
    rows = screen[2:-1]
    return len(rows) == SCREEN_ROWS and all(re.search(r"\s[0-9a-f]{8}(\s|$)", row) or "✗" in row or is_folder(row) for row in rows)


def is_folder(row):
    return bool(re.match(r"^\S.*/\s*$", row))


def status_first_screen(screen):
    match = re.search(r"first screen (\d+) ms", screen[-1])
    return int(match.group(1)) if match else None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if shutil.which("tmux") is None:
        fail("tmux is required for the remote browse test (apt-get install tmux)")
    browse = os.path.join(sys.argv[1], "browse")
    pages = os.path.join(sys.argv[1], "pages")
    work = tempfile.mkdtemp(prefix="avenues-remote-")
    tmux = Tmux()
    server = None
    try:
        tree = os.path.join(work, "tree")
        make_tree(tree)
        server = Server(tree, os.path.join(work, "server.log"))

        # Piped: the remote rows are the local rows.
        local = run([pages, tree, "--no-cache", "--width", "120"])
        remote = run([pages, server.url, "--cache", os.path.join(work, "pages-cache"), "--width", "120"])
        if remote != local:
            fail("pages URL differs from pages DIR:\n" + "\n".join(
                f"  {a!r}\n  {b!r}" for a, b in zip(local.decode().splitlines(), remote.decode().splitlines()) if a != b)[:3000])
        folders = sum(len(names) for _, names, _ in os.walk(tree))
        rows_total = FILES + folders
        if len(local.decode().splitlines()) != rows_total + 1:
            fail(f"pages printed {len(local.decode().splitlines())} lines for {FILES} files and {folders} folders")
        if run([browse, server.url, "--cache", os.path.join(work, "pages-cache"), "--width", "120"]) != run([browse, tree, "--no-cache", "--width", "120"]):
            fail("browse URL | cat differs from browse DIR | cat")
        print(f"ok: pages URL and browse URL, piped, print the {FILES} rows of the folder on disk, byte for byte")
        query = "file 20"
        local_matches = run([pages, tree, "--no-cache", "--width", "120", "--filter", query])
        remote_matches = run([pages, server.url, "--cache", os.path.join(work, "filter-cache"), "--width", "120", "--filter", query])
        if remote_matches != local_matches or len(local_matches.decode().splitlines()) != 101:
            fail(f"pages URL --filter differs from pages DIR --filter, or does not print the 100 matches:\n{remote_matches.decode()[:2000]}")
        print(f"ok: pages URL --filter '{query}', piped from a cold cache, prints the 100 matches pages DIR --filter does")

        # In a terminal, from a cold cache.
        cache = os.path.join(work, "cache")
        before = len(server.file_requests())
        command = f"{browse} {server.url} --cache {cache}; echo EXIT=$?; stty -a; sleep 120"
        tmux.start("b", command)
        screen = tmux.wait("b", "the first screen is filled", lambda s: len(s) == 40 and filled(s))
        cold = status_first_screen(screen)
        expected_first = local.decode().splitlines()[1][:40].rstrip()
        if not screen[2].startswith(expected_first):
            fail(f"the first row is not {expected_first!r}", screen)
        tmux.keys("b", "PageDown")
        tmux.wait("b", "PgDn shows the next screen, filled", lambda s: filled(s) and s[-1].lstrip().startswith(f"{SCREEN_ROWS + 1}–{2 * SCREEN_ROWS} of"))
        tmux.keys("b", "PageDown")
        screen = tmux.wait("b", "a second PgDn shows the third screen, filled",
                           lambda s: filled(s) and s[-1].lstrip().startswith(f"{2 * SCREEN_ROWS + 1}–{3 * SCREEN_ROWS} of"))
        asked = server.file_requests()[before:]
        sizes = sum(os.path.getsize(os.path.join(tree, path.lstrip("/"))) for path in set(asked))
        # Three screens and the prefetch window past the last one (one screen, the default), and the
        # rows behind kept warm while scrolling back is likely: never the tree.
        bound = 3 * SCREEN_ROWS + SCREEN_ROWS + 40
        if len(set(asked)) > bound or len(asked) != len(set(asked)):
            twice = sorted({path for path in asked if asked.count(path) > 1})
            fail(f"{len(asked)} downloads ({len(set(asked))} files) for three screens; at most {bound}, each once (twice: {twice[:5]})", screen)
        print(f"ok: first screen {cold} ms cold; three screens downloaded {len(set(asked))} of {FILES} files, {sizes} bytes")

        before_g = len(server.file_requests())
        tmux.keys("b", "G")
        last = local.decode().splitlines()[-1][:40].rstrip()
        screen = tmux.wait("b", "G follows the crawl to the last file, its screen filled",
                           lambda s: f"of {rows_total} │" in s[-1] and any(row.startswith(last) for row in s[-4:-1]) and filled(s))
        after_g = set(server.file_requests()[before_g:])
        # The last screen and the window behind it (G came from the end: nothing ahead); never the
        # rows skipped on the way.
        g_bound = 2 * SCREEN_ROWS + 40
        if len(after_g) > g_bound:
            fail(f"G downloaded {len(after_g)} files to show the last {SCREEN_ROWS} rows; at most {g_bound}", screen)
        last_screen = [row.split("  ")[0].strip() for row in screen[2:-1] if not is_folder(row)]
        print(f"ok: G followed the crawl to the last of {rows_total} rows, downloading {len(after_g)} files")
        tmux.keys("b", "q")
        terminal_is_sane(tmux, "b", tmux.wait("b", "browse exits after q", exited), "browse")
        print("ok: q exits and the terminal is sane")

        # Filter as you type over the whole tree, from a cold cache.
        tmux.start("f", f"{browse} {server.url} --cache {os.path.join(work, 'filter-screen-cache')}; echo EXIT=$?; stty -a; sleep 120")
        tmux.wait("f", "the first screen is filled and its downloads are done",
                  lambda s: len(s) == 40 and filled(s) and "downloading 0 │ queued 0" in s[-1])
        before_filter = len(server.file_requests())
        tmux.keys("f", "/", query)
        matches = [line.split("  ")[0].strip() for line in local_matches.decode().splitlines()[1:]]
        screen = tmux.wait("f", f"/{query} shows the first {SCREEN_ROWS} of its 100 matches, filled, with the exact count",
                           lambda s: f"“{query}”: 100 of " in s[0] and filled(s) and [row.split("  ")[0].strip() for row in s[2:-1]] == matches[:SCREEN_ROWS])
        downloaded = set(server.file_requests()[before_filter:])
        strays = [path for path in downloaded if query not in path]
        if strays or len(downloaded) > SCREEN_ROWS + 40:
            fail(f"the filter downloaded {len(downloaded)} files, {len(strays)} not matching (e.g. {strays[:3]})", screen)
        tmux.keys("f", "Down", "Down", "Enter", "Escape")
        screen = tmux.wait("f", "Esc shows every row again at the selected match",
                           lambda s: "filter cleared" in s[-1] and any(row.startswith(matches[2]) for row in s[2:-1]))
        print(f"ok: /{query} filtered {rows_total} remote rows to their 100 matches from a cold cache, downloading {len(downloaded)} matching files; Esc went back")
        tmux.keys("f", "q")
        terminal_is_sane(tmux, "f", tmux.wait("f", "browse exits after q", exited), "browse")

        # Offline: the server is gone.
        server.stop()
        tmux.start("o", command)
        screen = tmux.wait("o", "the offline first screen is filled from the caches", lambda s: len(s) == 40 and filled(s))
        warm = status_first_screen(screen)
        if not screen[2].startswith(expected_first):
            fail("the offline first screen differs", screen)
        for _ in range(8):
            tmux.keys("o", "PageDown")
        screen = tmux.wait("o", "rows never downloaded say offline and the status line says why",
                           lambda s: any("offline" in row for row in s[2:-1]) and "server unreachable" in s[-1])
        print(f"ok: offline, the first screen took {warm} ms from the caches; unseen rows say offline")
        tmux.keys("o", "G")
        screen = tmux.wait("o", "offline, G shows the last screen from the cache",
                           lambda s: f"of {rows_total} │" in s[-1] and any(row.startswith(last) for row in s[-4:-1]) and filled(s))
        if any("offline" in row for row in screen[2:-1]):
            fail("offline, the last screen (downloaded in the last run) says offline", screen)
        print("ok: offline, G shows the last screen, downloaded in the last run, from the cache")
        tmux.keys("o", "C-c")
        terminal_is_sane(tmux, "o", tmux.wait("o", "browse exits after Ctrl-C", exited), "browse", status=130)

        result = subprocess.run([browse, "http://127.0.0.1:9/nothing/", "--cache", cache], capture_output=True, text=True, timeout=60)
        lines = result.stderr.strip().splitlines()
        if result.returncode != 1 or len(lines) != 1 or "cannot reach" not in lines[0]:
            fail(f"an unreachable server must be one line and exit status 1, got {result.returncode}: {result.stderr!r}")
        print("ok:", lines[0])
    finally:
        tmux.close()
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("remote browse test passed")


if __name__ == "__main__":
    main()
