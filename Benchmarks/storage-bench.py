#!/usr/bin/env python3
"""Small values in DiskStorage, SQLiteStorage and Python's sqlite3, side by side in one run.

Usage: storage-bench.py [--count 100000] [--crossover]
(builds storage-bench in release first; works in $TMPDIR)

Prints, for COUNT values of 100 bytes written then read back one call each: wall times, the
throughput ratios, and the disk used (du). Python's side has SQLiteStorage's schema and pragmas
(WAL, synchronous=NORMAL) and one autocommit upsert per value. Then: opening the database and
reading one value; a sweep to a count limit; with --crossover, values of 1 KiB to 4 MiB (64 MiB
each) in both storages, to say where files win.
"""
import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def build():
    subprocess.run(["swift", "build", "--package-path", HERE, "-c", "release", "--product", "storage-bench"], check=True,
                   stdout=subprocess.DEVNULL)
    path = subprocess.run(["swift", "build", "--package-path", HERE, "-c", "release", "--show-bin-path"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return os.path.join(path, "storage-bench")


def disk_used(path):
    return int(subprocess.run(["du", "-sk", path], capture_output=True, text=True, check=True).stdout.split()[0]) * 1024


def swift_side(binary, kind, path, count, size=100):
    output = subprocess.run([binary, kind, path, str(count), str(size)], capture_output=True, text=True, check=True).stdout
    parts = output.replace(",", "").split()
    return float(parts[1]), float(parts[4]), output.strip()


def python_side(path, count, size=100):
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute("CREATE TABLE entries(key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, size INTEGER NOT NULL, "
                       "stored_at REAL NOT NULL, expires_at REAL, used_at INTEGER NOT NULL, checksum INTEGER NOT NULL)")
    connection.execute("CREATE INDEX entries_by_use ON entries(used_at)")
    values = [os.urandom(size) for _ in range(min(count, 1000))]
    start = time.monotonic()
    for index in range(count):
        key = f"key-{index}"
        value = values[index % len(values)]
        connection.execute("INSERT INTO entries(key, value, size, stored_at, expires_at, used_at, checksum) VALUES (?, ?, ?, ?, NULL, ?, 0) "
                           "ON CONFLICT(key) DO UPDATE SET value = excluded.value, size = excluded.size, stored_at = excluded.stored_at, "
                           "used_at = excluded.used_at", (key, value, len(key) + size, time.time(), time.time_ns()))
    written = time.monotonic()
    missing = 0
    for index in range(count):
        if connection.execute("SELECT value, stored_at, expires_at, checksum FROM entries WHERE key = ?", (f"key-{index}",)).fetchone() is None:
            missing += 1
    finished = time.monotonic()
    connection.close()
    return written - start, finished - written


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--crossover", action="store_true")
    options = parser.parse_args()
    binary = build()
    work = tempfile.mkdtemp(prefix="storage-bench-")
    try:
        count = options.count
        disk_write, disk_read, _ = swift_side(binary, "disk", os.path.join(work, "disk"), count)
        ours_file = os.path.join(work, "sqlite", "rows.sqlite")
        ours_write, ours_read, _ = swift_side(binary, "sqlite", ours_file, count)
        python_file = os.path.join(work, "python.sqlite")
        python_write, python_read = python_side(python_file, count)
        disk_bytes, ours_bytes, python_bytes = disk_used(os.path.join(work, "disk")), disk_used(os.path.dirname(ours_file)), disk_used(python_file)
        print(f"{count:,} values of 100 bytes, written then read one call each")
        print(f"  DiskStorage     write {disk_write:7.2f} s  read {disk_read:6.2f} s  disk {disk_bytes / 1e6:8.1f} MB")
        print(f"  SQLiteStorage   write {ours_write:7.2f} s  read {ours_read:6.2f} s  disk {ours_bytes / 1e6:8.1f} MB")
        print(f"  Python sqlite3  write {python_write:7.2f} s  read {python_read:6.2f} s  disk {python_bytes / 1e6:8.1f} MB")
        print(f"  SQLiteStorage's write throughput {disk_write / ours_write:.2f}× DiskStorage's, {python_write / ours_write:.2f}× Python's; "
              f"reads {disk_read / ours_read:.2f}× and {python_read / ours_read:.2f}×; disk 1/{disk_bytes / max(ours_bytes, 1):.0f} of DiskStorage's")
        opened = subprocess.run([binary, "open", ours_file, f"key-{count // 2}"], capture_output=True, text=True, check=True).stdout.strip()
        print(f"  open a database of {count:,} entries and read one value: {opened}")
        swept = subprocess.run([binary, "sweep", ours_file, str(count * 8 // 10)], capture_output=True, text=True, check=True).stdout.strip()
        print(f"  one write over a count limit of {count * 8 // 10:,}: {swept}")
        if options.crossover:
            print("value size crossover (64 MiB of values each, written then read):")
            for size in [1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20]:
                n = (64 << 20) // size
                dw, dr, _ = swift_side(binary, "disk", os.path.join(work, f"disk-{size}"), n, size)
                sw, sr, _ = swift_side(binary, "sqlite", os.path.join(work, f"sqlite-{size}", "rows.sqlite"), n, size)
                print(f"  {size // 1024:5} KiB × {n:6}: DiskStorage write {dw:6.2f} s read {dr:6.2f} s; SQLiteStorage write {sw:6.2f} s read {sr:6.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
