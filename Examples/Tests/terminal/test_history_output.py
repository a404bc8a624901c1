#!/usr/bin/env python3
"""Checks `history`'s output when it is not a terminal, against git's own, on 20,000 generated commits.

Usage: test_history_output.py BIN_DIR   (the folder holding the built `history`)

- `history REPO | head -n 25` prints git log's first 25 lines (hash, date, author, subject, tabs);
- `history REPO > file` prints the whole log, byte for byte what
  `git log --format=%h%x09%ad%x09%an%x09%s --date=short` prints, streamed through the paged rows;
- hostile commits — an author with 0x1F (seen 2026-11-23 to shift the columns), a Latin-1 author
  byte (seen printed as U+FFFD), tabs, escape sequences, a 10,000-line subject and one of 124 KB — are printed
  byte for byte as git prints them too;
- a folder that is not a repository, git missing from PATH, and a path git log refuses are one line
  on stderr and exit 1;
- a damaged repository (a commit lost): the commits git log prints before it fails, then one line
  on stderr and exit 1;
- a spool that cannot grow past a file size limit: the commits spooled, then one line on stderr
  that says why, and exit 1.
"""
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

from gitrepo import make_repo


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if shutil.which("git") is None:
        fail("git is required for the history output test (apt-get install git)")
    history = os.path.join(sys.argv[1], "history")
    work = tempfile.mkdtemp(prefix="avenues-history-output-")
    try:
        repository = make_repo(os.path.join(work, "repo"), 20_000)
        reference = subprocess.run(["git", "-C", repository, "log", "--format=%h%x09%ad%x09%an%x09%s", "--date=short"],
                                   check=True, capture_output=True).stdout
        cache = ["--cache", os.path.join(work, "cache")]

        head = subprocess.run(f"'{history}' '{repository}' --cache '{work}/cache' | head -n 25", shell=True,
                              check=True, capture_output=True, timeout=120).stdout
        if head.splitlines() != reference.splitlines()[:25]:
            fail("history | head -n 25 differs from git log's first 25 lines:\n" + head.decode(errors="replace"))
        print("ok: history | head -n 25 is git log's first 25 lines")

        full = subprocess.run([history, repository, *cache], capture_output=True, timeout=300)
        if full.returncode != 0:
            fail(f"history exited with {full.returncode}: {full.stderr.decode(errors='replace')}")
        if full.stdout != reference:
            got, want = full.stdout.splitlines(), reference.splitlines()
            first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            fail(f"the full output differs from git log's at line {first + 1} ({len(got)} lines, git log has {len(want)})")
        print(f"ok: the full output is git log's, {len(reference.splitlines())} lines byte for byte")

        hostile = os.path.join(work, "hostile")
        subprocess.run(["git", "init", "-q", "-b", "main", hostile], check=True)
        for author, message in [(b"Ev\x1fil", b"unit \x1f separator"), (b"R\xe9mi", b"latin-1 author"),
                                (b"Tab\tby", b"tabs\tin\tthe subject"), (b"esc", b"x \x1b]2;PWNED\x07 \x1b[2J"),
                                (b"long", b"first" + b"\nmore" * 10_000),
                                # Past the 64 KiB a page keeps of a spooled record: printed whole.
                                (b"longer", b"first" + b"\nmore words of a long paragraph" * 4_000)]:
            env = dict(os.environ, GIT_COMMITTER_NAME="c", GIT_COMMITTER_EMAIL="c@example.com", GIT_AUTHOR_EMAIL="a@example.com")
            env = {key.encode(): value.encode() for key, value in env.items()}
            env[b"GIT_AUTHOR_NAME"] = author
            subprocess.run([b"git", b"-C", hostile.encode(), b"commit", b"-q", b"--allow-empty", b"--cleanup=verbatim", b"-m", message], check=True, env=env, capture_output=True)
        want = subprocess.run(["git", "-C", hostile, "log", "--format=%h%x09%ad%x09%an%x09%s", "--date=short"], check=True, capture_output=True).stdout
        got = subprocess.run([history, hostile, *cache], capture_output=True, timeout=60)
        if got.returncode != 0 or got.stdout != want:
            fail(f"hostile commits: history printed {got.stdout[:300]!r} (exit {got.returncode}), git log {want[:300]!r}")
        print(f"ok: hostile commits (0x1F, Latin-1, tabs, escapes, a 10,000-line subject, a 124 KB one) are git log's bytes ({len(want)} bytes)")

        empty = os.path.join(work, "empty")
        os.makedirs(empty)
        not_repo = subprocess.run([history, empty, *cache], capture_output=True, timeout=60)
        no_git = subprocess.run([history, repository, *cache], capture_output=True, timeout=60,
                                env=dict(os.environ, PATH=os.path.join(work, "no-such-folder")))
        # Seen 2026-11-29: a path git refuses drew the full screen with git's error on every row.
        bad_path = subprocess.run([history, repository, *cache, "--", ":(bad"], capture_output=True, timeout=60)
        for label, result, expected in [("not a repository", not_repo, "is not in a git repository"),
                                        ("git missing", no_git, "git was not found on PATH"),
                                        ("a path git refuses", bad_path, "git log does not take the paths after --")]:
            lines = result.stderr.decode(errors="replace").splitlines()
            if result.returncode != 1 or len(lines) != 1 or expected not in lines[0] or result.stdout:
                fail(f"{label}: expected one line saying '{expected}' and exit status 1, got {result.returncode}: {lines}")
            print(f"ok: {label}: {lines[0]}")

        # A damaged repository (a commit's object lost, 20 commits down): git log prints the commits
        # before it and fails. history prints the same, then says why and exits 1 (seen 2026-11-29:
        # the page holding the failure was dropped, 100 of 149 commits printed, exit status 0).
        damaged = os.path.join(work, "damaged")
        env = dict(os.environ, GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@example.com", GIT_COMMITTER_NAME="c", GIT_COMMITTER_EMAIL="c@example.com")
        subprocess.run(["git", "init", "-q", damaged], check=True)
        for n in range(60):
            subprocess.run(["git", "-C", damaged, "commit", "-q", "--allow-empty", "-m", f"commit {n}"], check=True, env=env)
        lost = subprocess.run(["git", "-C", damaged, "rev-parse", "HEAD~20"], check=True, capture_output=True, text=True).stdout.strip()
        os.remove(os.path.join(damaged, ".git", "objects", lost[:2], lost[2:]))
        want = subprocess.run(["git", "-C", damaged, "log", "--format=%h%x09%ad%x09%an%x09%s", "--date=short"], capture_output=True).stdout
        got = subprocess.run([history, damaged, *cache], capture_output=True, timeout=60)
        lines = got.stderr.decode(errors="replace").splitlines()
        printed, wanted = got.stdout.count(b"\n"), want.count(b"\n")
        if got.returncode != 1 or got.stdout != want or len(lines) != 1 or "git log failed" not in lines[0] or wanted != 19:
            fail(f"damaged repository: exit {got.returncode}, {printed} lines printed (git log printed {wanted}), stderr {lines}")
        print(f"ok: a damaged repository: the {wanted} commits git printed, then: {lines[0][:100]}")

        # The log's spool cannot grow past 100 KiB (a file size limit, as a full disk would stop it;
        # seen 2026-11-29: Foundation's FileHandle.write trapped and history crashed): the commits
        # spooled are printed, then one line says why, exit status 1.
        def limited():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (100 * 1024, 100 * 1024))
        spool = ["--cache", os.path.join(work, "limited-cache")]
        got = subprocess.run([history, repository, *spool], capture_output=True, timeout=120, preexec_fn=limited)
        lines = got.stderr.decode(errors="replace").splitlines()
        spooled = got.stdout.count(b"\n")
        if (got.returncode != 1 or len(lines) != 1 or "could not be written to" not in lines[0] or "(File too large)" not in lines[0]
                or not got.stdout or not reference.startswith(got.stdout)):
            fail(f"spool over a file size limit: exit {got.returncode}, {spooled} lines printed, stderr {lines[-3:]}")
        print(f"ok: a spool that cannot grow: {spooled} commits printed, then: {lines[0][:90]}…")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("history output test passed")


if __name__ == "__main__":
    main()
