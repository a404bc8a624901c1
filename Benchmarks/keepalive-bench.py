#!/usr/bin/env python3
"""Many small files from one host: AsyncMedia (through `media-bench`) beside `curl --parallel
--parallel-max 6`, on the same URLs, plain http and TLS, from nginx on 127.0.0.1, alternating runs.

Usage: keepalive-bench.py [--files 2000] [--runs 3] [--concurrency 6] [--folder DIR]
(builds media-bench in release first; nginx, openssl and curl must be on PATH)

Both sides write their files under --folder: /dev/shm by default where it exists, so the figures are
the network's and the CPU's, not a disk's (on this project's VM an ext4 /tmp made both sides 2-10x
slower and noisier); give --folder /tmp to include the disk.

Avenues is run three ways, each a fresh process per run: a task per URL calling `file(for:)` (what
a list view's rows do), one `files(for:)` for the whole list (what curl is given: a list), read by
a task, and the same list answered by callback (`files(for:answer:)`: no task woken per file), also
with one transport thread instead of `CurlTransport.defaultThreads` (two on two cores).
Four more lines take the parts apart (`media-bench --transport-only`): the transport alone,
writing each body to a file as curl does (no cache, no task per file); then with each file made
as AsyncMedia commits it (no name until whole, `O_TMPFILE` + `linkat`); then also handed to a
task that reads the files as they end (as a `files(for:)` reader is woken); then the same with
each file opened ahead, in batches, by a task on the pool (`--prepared`): what the transport's
thread would be left with by a download path that prepares on the pool and ends each download on
the transport's thread.
Prints each run's wall time; the throughput ratio (curl's time / ours: ≥ 1.0 means we are at least
as fast), where ours is timed inside the process after its start-up, so curl's start-up — one curl
run of one URL, measured in every round — is taken off curl's time (the ratio with it left in is
printed beside); how many TCP connections nginx saw for each side of the last run; and the median
CPU time of each side (ours: the process during its timed run, every thread; curl: the whole
process, and without its start-up). The run is CPU-bound on a small machine, and CPU time moves
less than wall time.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "Examples", "Tests", "terminal"))
from nginxlib import Nginx, build_media_bench, make_test_ca  # noqa: E402


def timed(command):
    """Runs `command`; its wall time and CPU time (user + system), in seconds."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(command, check=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument("--folder", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    options = parser.parse_args()
    if options.folder is not None and not os.path.isdir(options.folder):
        sys.exit(f"keepalive-bench: --folder {options.folder} is not a folder")
    if options.files < 1 or options.runs < 1 or options.concurrency < 1:
        sys.exit("keepalive-bench: --files, --runs and --concurrency take a whole number of 1 or more")
    for tool in ["nginx", "openssl", "curl"]:
        if shutil.which(tool) is None:
            sys.exit(f"keepalive-bench: {tool} is required; install it (apt-get install {tool}) and run again")
    binary = build_media_bench()
    work = tempfile.mkdtemp(prefix="keepalive-bench-", dir=options.folder)
    os.chmod(work, 0o755)
    servers = []
    try:
        tree = os.path.join(work, "tree")
        os.makedirs(tree)
        for index in range(options.files):
            with open(os.path.join(tree, f"f{index:05d}.txt"), "wb") as file:
                file.write(os.urandom(512 + (index * 37) % 3584))  # 0.5–4 KiB
        ca, certificate, key = make_test_ca(work)
        for tls in [None, (certificate, key)]:
            folder = os.path.join(work, "tls" if tls else "plain")
            os.makedirs(folder)
            servers.append(Nginx(tree, folder, tls=tls))
        print(f"{options.files} files of 0.5–4 KiB from nginx on 127.0.0.1, {options.concurrency} at a time, written under {work}")
        for server in servers:
            scheme = server.url.split(":")[0]
            urls = [f"{server.url}f{index:05d}.txt" for index in range(options.files)]
            listing = os.path.join(work, f"{scheme}.urls")
            with open(listing, "w") as file:
                file.write("\n".join(urls) + "\n")
            config = os.path.join(work, f"{scheme}.curl")
            target = os.path.join(work, f"{scheme}-curl-out")
            with open(config, "w") as file:
                for index, url in enumerate(urls):
                    file.write(f'url = "{url}"\noutput = "{target}/f{index:05d}.txt"\n')
            ways = {"a task per URL": [], "one list": [], "one list, answered by callback": [], "  the same, one transport thread": [], "the transport alone": [], "  + atomic commit": [], "  + a reader per file": [],
                    "  + opened ahead on the pool": []}
            our_cpu = {way: [] for way in ways}
            theirs, their_cpu, start_up, start_up_cpu = [], [], [], []
            connections = {}
            for run in range(options.runs):
                for way, flags in [("a task per URL", []), ("one list", ["--list"]), ("one list, answered by callback", ["--callback"]),
                                   ("  the same, one transport thread", ["--callback", "--threads", "1"]),
                                   ("the transport alone", ["--transport-only"]),
                                   ("  + atomic commit", ["--transport-only", "--atomic"]),
                                   ("  + a reader per file", ["--transport-only", "--atomic", "--answers"]),
                                   ("  + opened ahead on the pool", ["--transport-only", "--prepared", "--answers"])]:
                    before = len(server.entries())
                    output = subprocess.run([binary, listing, "--ca-file", ca, "--concurrency", str(options.concurrency), "--runs", "1"] + flags,
                                            capture_output=True, text=True, check=True, env=dict(os.environ, TMPDIR=work)).stdout
                    ways[way].append(float(output.split(" in ")[1].split(" s")[0]))
                    our_cpu[way].append(float(output.split(", cpu ")[1].split(" s")[0]))
                    connections[way] = len({entry[3] for entry in server.entries()[before:]})
                shutil.rmtree(target, ignore_errors=True)
                os.makedirs(target)
                # Not --create-dirs: it costs curl four failing mkdir(2) a file (8 ms a run here).
                curl = ["curl", "-s", "--no-progress-meter", "--cacert", ca]
                wall, cpu = timed(curl + ["-o", os.path.join(target, "start-up"), urls[0]])
                start_up.append(wall)
                start_up_cpu.append(cpu)
                before = len(server.entries())
                wall, cpu = timed(curl + ["--parallel", "--parallel-max", str(options.concurrency), "-K", config])
                theirs.append(wall)
                their_cpu.append(cpu)
                connections["curl"] = len({entry[3] for entry in server.entries()[before:]})
            median = statistics.median
            # Ours is timed inside the process, after start-up; curl's start-up (process, libcurl,
            # TLS library) is taken off its time as one curl run of one URL measures it.
            their_time, their_work = median(theirs) - median(start_up), median(their_cpu) - median(start_up_cpu)
            print(f"{scheme:5}  curl --parallel {', '.join(f'{t:.3f}' for t in theirs)} s   connections {connections['curl']}"
                  f"   CPU (median) {median(their_cpu) * 1000:.0f} ms")
            print(f"       curl's start-up (one URL, median) {median(start_up) * 1000:.1f} ms, CPU {median(start_up_cpu) * 1000:.1f} ms:"
                  f" without it, {their_time * 1000:.1f} ms and CPU {their_work * 1000:.0f} ms a run")
            for way, ours in ways.items():
                ratio = their_time / median(ours)
                whole = median(theirs) / median(ours)
                print(f"       Avenues, {way}: {', '.join(f'{t:.3f}' for t in ours)} s   throughput {ratio:.2f}× curl's"
                      f" (medians, start-up left out of both; {whole:.2f}× with curl's in)"
                      f"   connections {connections[way]}   CPU (median) {median(our_cpu[way]) * 1000:.0f} ms")
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
