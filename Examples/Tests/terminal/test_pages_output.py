#!/usr/bin/env python3
"""Checks the examples' plain-text output for a folder of 500 files.

Usage: test_pages_output.py BIN_DIR   (the folder holding the built `pages` and `browse`)

- `pages DIR > file` (rows computed concurrently, several ahead, printed in order) equals
  `pages DIR --sequential` (one row after another, no avenue, no cache), byte for byte;
- the same holds with a warm disk cache, and for `browse DIR | cat` (not a terminal: plain table);
- every TSV row agrees with an independent computation here: size, newline count, zlib's CRC-32;
  every folder is a row (`path/`, nothing computed);
- 12,000 files stream to the end (seen 2026-11-23: the stream stopped for ever at ~4,980 rows);
- names that are not UTF-8 are rows, read by their real bytes;
- mistakes are one line, `pages: what happened; what to do`, and exit status 1;
- a COLUMNS that is no width (0, -5, abc) is not taken.
"""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import zlib


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def run(arguments):
    result = subprocess.run(arguments, capture_output=True, timeout=300)
    if result.returncode != 0:
        fail(f"{' '.join(arguments)} exited with {result.returncode}: {result.stderr.decode(errors='replace')}")
    return result.stdout


def make_files(root, count):
    for index in range(count):
        folder = os.path.join(root, f"part{index % 7}", f"sub{index % 3}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"file{index:03d}" + (".bin" if index % 9 == 0 else ".txt"))
        with open(path, "wb") as file:
            if index % 9 == 0:
                file.write(bytes((index * 31 + n * n) % 256 for n in range(700 + 13 * index)))
            elif index % 50 == 1:
                file.write(b"")  # empty files too
            else:
                file.write("".join(f"{'ünïcode ' if index % 4 == 0 else ''}row {n}\tof {index}\n" for n in range(index % 23)).encode())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    pages = os.path.join(sys.argv[1], "pages")
    browse = os.path.join(sys.argv[1], "browse")
    work = tempfile.mkdtemp(prefix="avenues-pages-")
    try:
        files = os.path.join(work, "files")
        make_files(files, 500)
        cache = os.path.join(work, "cache")

        folders = {os.path.relpath(folder, files) + "/" for folder, _, _ in os.walk(files) if folder != files}
        reference = run([pages, files, "--sequential", "--width", "120"])
        lines = reference.decode().splitlines()
        if len(lines) != 1 + 500 + len(folders):
            fail(f"the reference has {len(lines)} lines, expected a header, 500 file rows and {len(folders)} folder rows")
        for label, output in [
            ("pages, cold cache", run([pages, files, "--cache", cache, "--width", "120", "--ahead", "8"])),
            ("pages, warm cache", run([pages, files, "--cache", cache, "--width", "120", "--ahead", "8"])),
            ("pages, no cache, one at a time", run([pages, files, "--no-cache", "--width", "120", "--ahead", "1"])),
            ("browse piped", run([browse, files, "--cache", cache, "--width", "120"])),
        ]:
            if output != reference:
                fail(f"{label}: output differs from the sequential computation")
            print(f"ok: {label} equals the sequential computation ({len(lines) - 1} rows)")

        tsv = run([pages, files, "--cache", cache, "--format", "tsv"]).decode().splitlines()
        header, rows = tsv[0], tsv[1:]
        if header.split("\t") != ["path", "bytes", "lines", "crc32", "preview"] or len(rows) != 500 + len(folders):
            fail("unexpected TSV header or row count")
        folder_rows = [row for row in rows if row.split("\t")[0].endswith("/")]
        if {row.split("\t")[0] for row in folder_rows} != folders or any(row.split("\t")[1:] != ["", "", "", ""] for row in folder_rows):
            fail(f"folder rows are not each folder with nothing computed: {folder_rows[:3]}")
        for row in rows:
            if row in folder_rows:
                continue
            path, size, lines_count, crc, _ = row.split("\t")
            data = open(os.path.join(files, path), "rb").read()
            newlines = data.count(b"\n")
            if int(size) != len(data) or int(lines_count) != newlines or crc != f"{zlib.crc32(data):08x}":
                fail(f"{path}: the tool says {size} bytes, {lines_count} lines, crc {crc}; "
                     f"independently: {len(data)}, {newlines}, {zlib.crc32(data):08x}")
        print(f"ok: every TSV row matches sizes, newline counts and zlib CRC-32 computed here; {len(folders)} folder rows")

        many = os.path.join(work, "many")
        os.makedirs(many)
        for index in range(12000):
            with open(os.path.join(many, f"f{index:05d}.txt"), "w") as file:
                file.write(f"{index}\n")
        streamed = run([pages, many, "--no-cache", "--format", "tsv"]).decode().splitlines()
        if len(streamed) != 12001 or not streamed[-1].startswith("f11999.txt\t"):
            fail(f"12,000 files: {len(streamed) - 1} rows streamed, the last {streamed[-1][:40]!r}")
        print("ok: 12,000 files stream to the end")

        odd = os.path.join(work, "odd").encode()
        os.makedirs(odd)
        for name in [b"caf\xe9.txt", b"\xff\xfe.txt", b"plain.txt"]:
            with open(os.path.join(odd, name), "wb") as file:
                file.write(name + b"\n")
        odd_rows = run([pages, odd.decode(), "--no-cache", "--format", "tsv"]).decode().splitlines()[1:]
        if len(odd_rows) != 3 or any(row.split("\t")[1:3] == ["", ""] or "error" in row for row in odd_rows):
            fail(f"names that are not UTF-8: {odd_rows}")
        print("ok: names that are not UTF-8 are listed and read:", ", ".join(row.split("\t")[0] for row in odd_rows))

        # Seen 2026-11-29: a name with a tab or a line break was written with a space or a `?`, and
        # one that is not UTF-8 with replacement characters, so it could not be told from another
        # name, nor opened. Fields are escaped, and read back byte for byte.
        awkward = os.path.join(work, "awkward").encode()
        os.makedirs(awkward)
        names = [b"tab\there", b"line\nbreak", b"back\\slash", b"esc\x1b[2Jape", b"a b?c", b"plain", b"caf\xe9\xff.txt",
                 "c1\u0085 and rlo\u202e".encode(), "caf\u00e9".encode()]
        for name in names:
            with open(os.path.join(awkward, name), "wb") as file:
                file.write(b"x\n")
        def unescape(field):
            out, i = bytearray(), 0
            while i < len(field):
                if field[i] == "\\":
                    kind = field[i + 1]
                    if kind == "x":
                        out.append(int(field[i + 2:i + 4], 16)); i += 4; continue
                    if kind == "u":
                        out += chr(int(field[i + 2:i + 6], 16)).encode(); i += 6; continue
                    out += {"\\": b"\\", "t": b"\t", "n": b"\n", "r": b"\r"}[kind]; i += 2; continue
                out += field[i].encode(); i += 1
            return bytes(out)
        # And 300 random names of 1–40 bytes (any byte but / and NUL), against unescaping them.
        generator = random.Random(20261129)
        while len(names) < 309:
            name = bytes(generator.choice([b for b in range(1, 256) if b != 0x2F]) for _ in range(generator.randint(1, 40)))
            if name.startswith(b".") or name in names:
                continue  # hidden names are not listed
            names.append(name)
            with open(os.path.join(awkward, name), "wb") as file:
                file.write(b"x\n")
        awkward_rows = run([pages, awkward.decode(errors="surrogateescape"), "--no-cache", "--format", "tsv"]).decode().split("\n")[1:-1]
        read_back = sorted(unescape(row.split("\t")[0]) for row in awkward_rows)
        if len(awkward_rows) != len(names) or read_back != sorted(names) or any(len(row.split("\t")) != 5 for row in awkward_rows):
            fail(f"awkward names in TSV: {awkward_rows}; read back {read_back}")
        print(f"ok: {len(names)} awkward and random names are one TSV field each and read back byte for byte")

        loop = os.path.join(work, "loop")
        os.symlink("loop", loop)
        for arguments, expected in [
            ([pages, os.path.join(work, "nonexistent")], "pages: " + os.path.join(work, "nonexistent") + " cannot be opened (No such file or directory); give the path of a file or a folder"),
            # A link loop was "does not exist" too: the system's reason tells them apart.
            ([pages, loop], "pages: " + loop + " cannot be opened (Too many levels of symbolic links); give the path of a file or a folder"),
            ([pages, "--ahead", "0", files], "pages: --ahead must be at least 1; see 'pages --help'"),
            ([pages, "--bogus"], "pages: unknown option '--bogus'; see 'pages --help'"),
            ([browse, "--width", "x"], "browse: the value 'x' is invalid for '--width <width>'; see 'browse --help'"),
            # A --cache that is a file: the disk cache was silently off (history: an NSCocoaErrorDomain dump).
            ([pages, files, "--cache", os.path.join(files, "part1", "sub1", "file001.txt")],
             f"pages: --cache {os.path.join(files, 'part1', 'sub1', 'file001.txt')} is not a folder; give a folder (it is made if missing), or --no-cache; see 'pages --help'"),
            ([browse, files, "--cache", os.path.join(files, "part1", "sub1", "file001.txt")],
             f"browse: --cache {os.path.join(files, 'part1', 'sub1', 'file001.txt')} is not a folder; give a folder (it is made if missing), or --no-cache; see 'browse --help'"),
            # A negative number is a value, refused for what it is (it was read as an option: "missing value").
            ([pages, files, "--latency", "-1"], "pages: --latency must be 0 or more milliseconds; see 'pages --help'"),
            ([browse, files, "--ahead", "-5"], "browse: --ahead must be 0 or more rows; see 'browse --help'"),
            # A URL that cannot be browsed is not "no such folder", and empty text is not "here".
            ([browse, "http://[::1"], "browse: http://[::1 is not a URL that can be read (it needs a host, and a port from 1 to 65535 if it has one);"
                                      " give the URL of a folder index, such as http://example.com/files/"),
            ([browse, "ftp://example.com/pub/"], "browse: ftp: URLs cannot be browsed; give an http:// or https:// URL of a folder index, or the path of a folder"),
            ([pages, "file:///etc/"], "pages: file:///etc/ is a file URL; give its path instead (/etc)"),
            ([browse, ""], "browse: the folder is empty text; give a path (. for this folder) or a URL; see 'browse --help'"),
            ([pages, ""], "pages: the file or folder is empty text; give a path (. for this folder) or a URL; see 'pages --help'"),
        ]:
            result = subprocess.run(arguments, capture_output=True, timeout=60)
            message = result.stderr.decode().strip()
            if result.returncode != 1 or message != expected or result.stdout:
                fail(f"{' '.join(arguments[1:])}: exit {result.returncode}, stderr {message!r}, expected exit 1 and {expected!r}")
        # No cache folder to be found (seen 2026-11-29: "pass a folder with DiskStorage(directory:)",
        # the library's advice to a programmer).
        homeless = {name: value for name, value in os.environ.items() if name not in ("HOME", "XDG_CACHE_HOME")}
        result = subprocess.run([pages, files], capture_output=True, timeout=60, env=homeless)
        expected = "pages: no cache folder: neither XDG_CACHE_HOME nor HOME is set to an absolute path; set one, or give a folder with --cache"
        if result.returncode != 1 or result.stderr.decode().strip() != expected:
            fail(f"pages with no HOME: exit {result.returncode}, stderr {result.stderr.decode()!r}, expected {expected!r}")
        print("ok: mistakes are one line, TOOL: what happened; what to do, exit status 1")

        # Probe of 2026-11-26: the largest numbers an option takes are not mistakes, and trapped
        # (browse --concurrency: the rows streamed ahead overflowed; history --page-size: its
        # memory bound did).
        largest = str(2**63 - 1)
        streamed = run([browse, files, "--concurrency", largest, "--no-cache"]).decode()
        if streamed != run([browse, files, "--no-cache"]).decode():
            fail(f"browse --concurrency {largest} printed other rows than browse does")
        history = os.path.join(sys.argv[1], "history")
        repository = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
        if shutil.which("git") and os.path.isdir(os.path.join(repository, ".git")):
            logged = run([history, repository, "--page-size", largest, "--no-cache"]).decode().splitlines()
            if not logged:
                fail(f"history --page-size {largest} printed nothing")
        print("ok: the largest --concurrency and --page-size run to the end")

        # A COLUMNS that is no width is not taken (seen 2026-11-29: COLUMNS=-5 and 0 made every row "…").
        plain = subprocess.run([browse, files, "--no-cache"], capture_output=True, timeout=300,
                               env={name: value for name, value in os.environ.items() if name != "COLUMNS"}).stdout
        for columns in ("0", "-5", "abc"):
            shown = subprocess.run([browse, files, "--no-cache"], capture_output=True, timeout=300, env=dict(os.environ, COLUMNS=columns)).stdout
            if shown != plain:
                fail(f"COLUMNS={columns} changed browse's rows: {shown[:200]!r}")
        if len(plain.splitlines()[0]) != 120:
            fail(f"with no COLUMNS the rows are not 120 columns: {plain.splitlines()[0]!r}")
        print("ok: COLUMNS of 0, -5 or abc is not taken; rows are 120 columns")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("pages output test passed")


if __name__ == "__main__":
    main()
