#!/usr/bin/env python3
"""Checks the examples' plain-text output for a folder of 500 files.

Usage: test_pages_output.py BIN_DIR   (the folder holding the built `pages` and `browse`)

- `pages DIR > file` (rows computed concurrently, several ahead, printed in order) equals
  `pages DIR --sequential` (one row after another, no avenue, no cache), byte for byte;
- the same holds with a warm disk cache, and for `browse DIR | cat` (not a terminal: plain table);
- every TSV row agrees with an independent computation here: size, newline count, zlib's CRC-32.
"""
import os
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

        reference = run([pages, files, "--sequential", "--width", "120"])
        lines = reference.decode().splitlines()
        if len(lines) != 501:
            fail(f"the reference has {len(lines)} lines, expected a header and 500 rows")
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
        if header.split("\t") != ["path", "bytes", "lines", "crc32", "preview"] or len(rows) != 500:
            fail("unexpected TSV header or row count")
        for row in rows:
            path, size, lines_count, crc, _ = row.split("\t")
            data = open(os.path.join(files, path), "rb").read()
            newlines = data.count(b"\n")
            if int(size) != len(data) or int(lines_count) != newlines or crc != f"{zlib.crc32(data):08x}":
                fail(f"{path}: the tool says {size} bytes, {lines_count} lines, crc {crc}; "
                     f"independently: {len(data)}, {newlines}, {zlib.crc32(data):08x}")
        print("ok: every TSV row matches sizes, newline counts and zlib CRC-32 computed here")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("pages output test passed")


if __name__ == "__main__":
    main()
