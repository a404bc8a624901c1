#!/usr/bin/env python3
"""Big files from nginx on 127.0.0.1, plain http and TLS: AsyncMedia (through `media-bench`) beside
`curl -o FILE` — wall time and peak RSS of each process — and the latency of small requests made
through the same transport while a 1 GiB https download runs.

Usage: download-bench.py [--runs 3]
(builds media-bench in release first; nginx, openssl and curl must be on PATH; needs ~1.3 GiB in /tmp)
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "Examples", "Tests", "terminal"))
from nginxlib import Nginx, build_media_bench, make_test_ca  # noqa: E402


def timed(arguments):
    """(seconds, peak RSS in MiB) of a command, by GNU time."""
    result = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + arguments, capture_output=True, text=True, check=True)
    seconds, kilobytes = result.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kilobytes) / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    for tool in ["nginx", "openssl", "curl"]:
        if shutil.which(tool) is None:
            sys.exit(f"download-bench: {tool} is required; install it (apt-get install {tool}) and run again")
    if not os.path.exists("/usr/bin/time"):
        sys.exit("download-bench: GNU time is required (apt-get install time)")
    binary = build_media_bench()
    work = tempfile.mkdtemp(prefix="download-bench-")
    os.chmod(work, 0o755)
    servers = []
    try:
        tree = os.path.join(work, "tree")
        os.makedirs(tree)
        for name, size in [("256m.bin", 256 << 20), ("1g.bin", 1 << 30)]:
            with open(os.path.join(tree, name), "wb") as file:
                block = os.urandom(1 << 20)
                for _ in range(size >> 20):
                    file.write(block)
        with open(os.path.join(tree, "small.txt"), "wb") as file:
            file.write(b"x" * 100)
        ca, certificate, key = make_test_ca(work)
        for tls in [None, (certificate, key)]:
            folder = os.path.join(work, "tls" if tls else "plain")
            os.makedirs(folder)
            servers.append(Nginx(tree, folder, tls=tls))
        for server in servers:
            scheme = server.url.split(":")[0]
            listing = os.path.join(work, f"{scheme}.urls")
            with open(listing, "w") as file:
                file.write(server.url + "256m.bin\n")
            ours, theirs = [], []
            for _ in range(options.runs):
                ours.append(timed([binary, listing, "--ca-file", ca, "--runs", "1"]))
                target = os.path.join(work, "curl.out")
                theirs.append(timed(["curl", "-s", "--cacert", ca, "-o", target, server.url + "256m.bin"]))
                os.remove(target)
            print(f"256 MiB over {scheme:5}: Avenues " + ", ".join(f"{s:.2f} s / {m:.0f} MiB" for s, m in ours)
                  + "   curl -o " + ", ".join(f"{s:.2f} s / {m:.0f} MiB" for s, m in theirs) + "   (wall / peak RSS)")
        tls = servers[1]
        for _ in range(options.runs):
            output = subprocess.run([binary, "--latency", tls.url + "1g.bin", tls.url + "small.txt", "--ca-file", ca],
                                    capture_output=True, text=True, check=True).stdout.strip()
            print("1 GiB over https, 100-byte requests meanwhile: " + output)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
