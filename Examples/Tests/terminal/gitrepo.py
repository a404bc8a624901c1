#!/usr/bin/env python3
"""Generates a git repository with many commits quickly, through `git fast-import`.

Usage as a script: gitrepo.py PATH COUNT   (used by the Benchmarks to make a 1,000,000-commit log)

Commit n (1 = the root) touches one or two of 40 files with a few added and removed lines, so
`git show --numstat` has something to count; authors and dates vary; its subject is
"Change <file>: step n", and commit NEEDLE_AT (if the log is long enough) says "needle in the history".
"""
import os
import subprocess
import sys

NEEDLE_AT = 4_321
NEEDLE = "needle in the history"
AUTHORS = ["Ada Lovelace", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov", "Ken Thompson",
           "Frances Allen", "Donald Knuth", "Margaret Hamilton"]
EPOCH = 1_500_000_000


def subject(n):
    return NEEDLE if n == NEEDLE_AT else f"Change file{n % 40:02d}.txt: step {n}"


def make_repo(path, count):
    """Creates a repository at `path` whose `main` branch has `count` commits; returns its path."""
    os.makedirs(path, exist_ok=True)
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=path)
    subprocess.run(["git", "init", "-q", "-b", "main", path], check=True, env=env)
    importer = subprocess.Popen(["git", "-C", path, "fast-import", "--quiet"], stdin=subprocess.PIPE, env=env)
    out = importer.stdin
    for n in range(1, count + 1):
        author = AUTHORS[n % len(AUTHORS)]
        email = author.split()[0].lower() + "@example.com"
        when = EPOCH + n * 600
        message = subject(n).encode()
        chunks = [f"commit refs/heads/main\nmark :{n}\n"
                  f"author {author} <{email}> {when} +0000\n"
                  f"committer {author} <{email}> {when} +0000\n"
                  f"data {len(message)}\n".encode(), message, b"\n"]
        if n > 1:
            chunks.append(f"from :{n - 1}\n".encode())
        files = [n % 40] if n % 3 else [n % 40, (n * 7) % 40]
        for file in files:
            body = "".join(f"line {line} after step {n - (line % 3)}\n" for line in range(n % 9 + 1)).encode()
            chunks.append(f"M 100644 inline file{file:02d}.txt\ndata {len(body)}\n".encode() + body + b"\n")
        out.write(b"".join(chunks))
    out.close()
    if importer.wait() != 0:
        raise RuntimeError("git fast-import failed")
    subprocess.run(["git", "-C", path, "reset", "-q", "--hard", "main"], check=True, env=env)
    return path


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    make_repo(sys.argv[1], int(sys.argv[2]))
