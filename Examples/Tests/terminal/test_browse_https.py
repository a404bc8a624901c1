#!/usr/bin/env python3
"""Runs `pages` and `browse` against nginx over TLS on 127.0.0.1, its certificate signed by a CA
made for the test (openssl), and checks what a user sees.

Usage: test_browse_https.py BIN_DIR   (the folder holding the built `browse` and `pages`)

- `pages URL --ca-file CA` and `browse URL --ca-file CA`, piped, print exactly what they print for
  the same folder on disk; `SSL_CERT_FILE=CA` does the same as `--ca-file`;
- without the CA the certificate is not trusted: one line on stderr that says so and names
  `--ca-file`, exit status 1 (not "offline"); an unreadable CA file, or a folder, a FIFO or a
  device given as one, is one line and exit status 1;
- in a terminal (tmux, 120x40): the first screen fills from a cold cache, PgDn shows the next,
  q restores the terminal;
- keep-alive: the files of the first screens came over a few connections, not one each (counted in
  nginx's log of connection serial numbers).
"""
import os
import shutil
import subprocess
import sys
import tempfile

from nginxlib import Nginx, make_test_ca
from test_browse_remote import FILES, SCREEN_ROWS, filled, make_tree, run
from tmuxlib import Tmux, exited, fail, terminal_is_sane


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for tool, why in [("tmux", "apt-get install tmux"), ("nginx", "apt-get install nginx"), ("openssl", "apt-get install openssl")]:
        if shutil.which(tool) is None:
            fail(f"{tool} is required for the https test ({why})")
    browse = os.path.join(sys.argv[1], "browse")
    pages = os.path.join(sys.argv[1], "pages")
    work = tempfile.mkdtemp(prefix="avenues-https-")
    os.chmod(work, 0o755)
    tmux = Tmux()
    server = None
    try:
        tree = os.path.join(work, "tree")
        make_tree(tree)
        ca, certificate, key = make_test_ca(work)
        server = Nginx(tree, work, tls=(certificate, key))
        environment = {name: value for name, value in os.environ.items() if name != "SSL_CERT_FILE"}

        local = run([pages, tree, "--no-cache", "--width", "120"])
        remote = run([pages, server.url, "--ca-file", ca, "--cache", os.path.join(work, "c1"), "--width", "120"])
        if remote != local:
            fail("pages https URL --ca-file differs from pages DIR:\n" + "\n".join(
                f"  {a!r}\n  {b!r}" for a, b in zip(local.decode().splitlines(), remote.decode().splitlines()) if a != b)[:3000])
        by_environment = subprocess.run([pages, server.url, "--cache", os.path.join(work, "c2"), "--width", "120"],
                                        capture_output=True, timeout=300, env=dict(environment, SSL_CERT_FILE=ca))
        if by_environment.returncode != 0 or by_environment.stdout != local:
            fail(f"SSL_CERT_FILE=CA pages URL: exit {by_environment.returncode}, {by_environment.stderr.decode(errors='replace')}")
        if run([browse, server.url, "--ca-file", ca, "--cache", os.path.join(work, "c3"), "--width", "120"]) != run([browse, tree, "--no-cache", "--width", "120"]):
            fail("browse https URL | cat differs from browse DIR | cat")
        print(f"ok: over https with the test CA (--ca-file, or SSL_CERT_FILE), pages and browse print the {FILES} rows of the folder on disk, byte for byte")

        untrusted = subprocess.run([browse, server.url, "--cache", os.path.join(work, "c4")], capture_output=True, text=True, timeout=60, env=environment)
        lines = untrusted.stderr.strip().splitlines()
        if untrusted.returncode != 1 or len(lines) != 1 or "--ca-file" not in lines[0] or "secure" not in lines[0]:
            fail(f"an untrusted certificate must be one line naming --ca-file and exit status 1, got {untrusted.returncode}: {untrusted.stderr!r}")
        print("ok:", lines[0])
        missing = subprocess.run([browse, server.url, "--ca-file", os.path.join(work, "nothing.pem")], capture_output=True, text=True, timeout=60)
        lines = missing.stderr.strip().splitlines()
        if missing.returncode != 1 or len(lines) != 1 or "CA file" not in lines[0]:
            fail(f"a missing CA file must be one line and exit status 1, got {missing.returncode}: {missing.stderr!r}")
        print("ok:", lines[0])
        # Probe of 2026-11-26: a folder passed the readability check and failed later as a secure
        # connection that could not be made, telling the user to give the --ca-file they gave.
        folder = subprocess.run([browse, server.url, "--ca-file", work], capture_output=True, text=True, timeout=60)
        lines = folder.stderr.strip().splitlines()
        if folder.returncode != 1 or len(lines) != 1 or "is a folder" not in lines[0]:
            fail(f"a folder given as the CA file must be one line saying so and exit status 1, got {folder.returncode}: {folder.stderr!r}")
        print("ok:", lines[0])
        # Probe of 2026-11-26: a FIFO as the CA file was opened by TLS on the transport's thread,
        # which waited for a writer for ever (browse hung with nothing on the screen).
        fifo = os.path.join(work, "ca.fifo")
        os.mkfifo(fifo)
        for given in [fifo, "/dev/zero"]:
            refused = subprocess.run([browse, server.url, "--ca-file", given], capture_output=True, text=True, timeout=60)
            lines = refused.stderr.strip().splitlines()
            if refused.returncode != 1 or len(lines) != 1 or "not a regular file" not in lines[0]:
                fail(f"{given} as the CA file must be one line saying it is not a regular file and exit status 1, got {refused.returncode}: {refused.stderr!r}")
            print("ok:", lines[0])

        # In a terminal, from a cold cache.
        before = len(server.entries())
        command = f"{browse} {server.url} --ca-file {ca} --cache {os.path.join(work, 'c5')}; echo EXIT=$?; stty -a; sleep 120"
        tmux.start("s", command)
        screen = tmux.wait("s", "the first screen is filled over https", lambda s: len(s) == 40 and filled(s))
        expected_first = local.decode().splitlines()[1][:40].rstrip()
        if not screen[2].startswith(expected_first):
            fail(f"the first row is not {expected_first!r}", screen)
        tmux.keys("s", "PageDown")
        tmux.wait("s", "PgDn shows the next screen, filled", lambda s: filled(s) and s[-1].lstrip().startswith(f"{SCREEN_ROWS + 1}–{2 * SCREEN_ROWS} of"))
        tmux.keys("s", "q")
        terminal_is_sane(tmux, "s", tmux.wait("s", "browse exits after q", exited), "browse")
        requests = server.entries()[before:]
        connections = len({connection for _, _, _, connection in requests})
        if connections * 4 > len(requests):
            fail(f"{len(requests)} requests over {connections} connections: kept-alive connections are not reused")
        print(f"ok: in a terminal over https, the first screens filled; {len(requests)} requests over {connections} TLS connections")
    finally:
        tmux.close()
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("https browse test passed")


if __name__ == "__main__":
    main()
