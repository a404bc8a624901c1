#!/usr/bin/env python3
"""Checks that the tools say so when their output cannot be written, and never crash.

Usage: test_output_errors.py BIN_DIR   (the folder holding the built `browse`, `pages` and `history`)

Seen 2026-11-29: `browse DIR > /dev/full` and `pages FOLDER > /dev/full` exited 0 having written
nothing (`print` drops write errors), `history REPO > /dev/full` crashed (Foundation's
`FileHandle.write(_:)` traps), `pages FILE > /dev/full` blamed the file ("FILE could not be copied
(The operation could not be completed…)"), and `pages /proc/self/mem` said
"NSCocoaErrorDomain error 256" for an I/O error. Now:

- every tool, with standard output on a full disk (/dev/full), small output or large, one line on
  standard error that names standard output and the reason, and exit status 1;
- with standard error on a full disk too, exit status 1 and no crash;
- with standard output closed, one line that says so, exit status 1, and nothing written into the
  files the tool opened;
- an input that cannot be read says why, in the system's words.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from gitrepo import make_repo


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def run(arguments, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE):
    with open("/dev/full", "wb") as full:
        result = subprocess.run(arguments, stdin=stdin, stdout=full, stderr=stderr, timeout=300)
    return result.returncode, (result.stderr or b"").decode(errors="replace")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if not os.path.exists("/dev/full"):
        print("skipped: this system has no /dev/full")
        return
    binaries = sys.argv[1]
    browse, pages, history = (os.path.join(binaries, name) for name in ("browse", "pages", "history"))
    work = tempfile.mkdtemp(prefix="avenues-output-errors-")
    try:
        folder = os.path.join(work, "files")
        os.makedirs(folder)
        for index in range(300):  # about 30 KB of table: more than one buffer
            with open(os.path.join(folder, f"file{index:03d}.txt"), "w") as file:
                file.write(f"line of file {index}\n" * (index % 7))
        small = os.path.join(work, "small.txt")
        with open(small, "w") as file:
            file.write("one\ntwo\n")
        large = os.path.join(work, "large.txt")
        with open(large, "w") as file:
            file.write("a line of the large file\n" * 100_000)
        cache = ["--cache", os.path.join(work, "cache")]
        cases = [
            ("browse FOLDER", [browse, folder, *cache], None),
            ("pages FOLDER", [pages, folder, *cache], None),
            ("pages FILE (small)", [pages, small], None),
            ("pages FILE (large)", [pages, large], None),
            ("pages FILE --filter", [pages, large, "--filter", "large"], None),
            ("cmd | pages", [pages], small),
        ]
        if shutil.which("git"):
            repository = make_repo(os.path.join(work, "repo"), 2_000)
            cases += [("history REPO", [history, repository, *cache], None)]
        else:
            print("note: git is missing; history is not checked")
        for name, arguments, stdin_path in cases:
            stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
            try:
                status, errors = run(arguments, stdin=stdin)
            finally:
                if stdin_path:
                    stdin.close()
            tool = os.path.basename(arguments[0])
            expected = f"{tool}: standard output could not be written (No space left on device); free some space"
            if status != 1 or not errors.startswith(expected) or errors.count("\n") != 1:
                fail(f"{name} > /dev/full: status {status}, stderr {errors!r}; expected status 1 and one line starting {expected!r}")
            # Nowhere to say it either: still status 1, never a crash (a signal's status is negative).
            with open("/dev/full", "wb") as full:
                quiet = subprocess.run(arguments, stdin=open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL,
                                       stdout=full, stderr=full, timeout=300).returncode
            if quiet != 1:
                fail(f"{name} > /dev/full 2> /dev/full: status {quiet}, expected 1")
            print(f"ok: {name} > /dev/full says so and exits 1, also with standard error full")

        # Standard output closed (`tool >&-`): seen 2026-11-29, the first file opened took its
        # number (libdispatch's eventfd: "Invalid argument"; a spool or a database would have
        # received the rows). Each says so; history's spool and stats are whole for the next run.
        closed_cases = [("browse", [browse, folder, *cache]), ("pages", [pages, large])]
        if shutil.which("git"):
            closed_cases.append(("history", [history, repository, *cache]))
        for name, arguments in closed_cases:
            result = subprocess.run(arguments, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300, preexec_fn=lambda: os.close(1))
            errors = result.stderr.decode(errors="replace")
            if result.returncode != 1 or "standard output could not be written (Bad file descriptor); it is closed" not in errors:
                fail(f"{name} >&-: status {result.returncode}, stderr {errors!r}")
        if shutil.which("git"):
            reference = subprocess.run(["git", "-C", repository, "log", "--format=%h%x09%ad%x09%an%x09%s", "--date=short"],
                                       check=True, capture_output=True).stdout
            again = subprocess.run([history, repository, *cache], capture_output=True, timeout=300)
            if again.returncode != 0 or again.stdout != reference:
                fail(f"history after a run with standard output closed: status {again.returncode}, output differs from git log")
        print("ok: with standard output closed each tool says so and exits 1; history's spool is whole after it")

        if os.path.exists("/proc/self/mem"):
            result = subprocess.run([pages, "/proc/self/mem"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
            errors = result.stderr.decode(errors="replace")
            if result.returncode != 1 or "could not be read (Input/output error)" not in errors:
                fail(f"pages /proc/self/mem: status {result.returncode}, stderr {errors!r}")
            print("ok: pages /proc/self/mem says 'could not be read (Input/output error)'")
        print("output errors test passed")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
