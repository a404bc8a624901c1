#!/usr/bin/env python3
"""`pages FILE` beside Debian's less and lnav on a generated 10,000,000-line access log (~1.4 GB),
page cache warm, each tool in its own tmux session (120x40), its screen polled every few ms.

Usage: pages-bench.py [--lines 10000000] [--runs 3] [--file PATH] [--only open,goto,search,follow] [--static]
(builds `pages` in release first, and with --static also linked statically; less, lnav and tmux must be on
PATH: apt-get install less lnav tmux)

What each figure is, for every tool, from a fresh process each time:
- first screen: from asking tmux to start the program to the file's first line on screen (lnav
  opens a log at its end, so its figure is the time to its first screen of any lines);
- first screen, pty: the same without tmux, which adds ~8 ms to start a session and ~5 ms a poll:
  the program started on a pseudo-terminal of its own (120x40), from fork to the first line's bytes
  in its output, 20 times a run, the median (pages, pages static, less, less -N);
- G: from the first screen, G, to the last line on screen with its exact line number (less -N:
  line numbers on; lnav: the line and its L-number in the status bar);
- :5000000: from the first screen to line 5,000,000 at the top (less: `5000000g`, without -N; lnav:
  `:goto 4999999`, its lines count from 0, after it has indexed);
- search: from the first screen, `/needle-7f3a9c` (a string only in the last 1 %), to its first
  line on screen (lnav: after it has indexed, from the top);
- peak memory: VmHWM of the process after G;
- follow: a 1,000,000-line copy grows by 100,000 lines a second for 10 s while the tool follows
  its end (pages: F; less +F; lnav: at its end), the screen sampled every 50 ms: the median and the
  most lines it was behind the writer (a screen without an appended line counts as all of them
  behind), how far behind it was 1 s after the writer stopped, and the peak memory.
Medians of --runs runs are printed, every run beside them.
"""
import argparse
import fcntl
import os
import pty
import select
import signal
import struct
import termios
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NEEDLE = "needle-7f3a9c"
WIDTH, HEIGHT = 120, 40


def generate(path, lines, seed=7):
    """An access-log-like file: lines of 45–400 bytes; NEEDLE only in the last 1 %."""
    rng = random.Random(seed)
    ips = [f"{rng.randrange(1, 255)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}" for _ in range(5000)]
    paths = ["/", "/index.html", "/api/v1/items", "/static/app.js", "/static/style.css", "/login", "/search", "/img/logo.png", "/feed.xml", "/robots.txt"]
    agents = ["Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0", "curl/8.5.0", "Wget/1.21", "Mozilla/5.0 (Macintosh) Safari/605.1.15", "Go-http-client/1.1", "-"]
    methods = ["GET"] * 8 + ["POST", "HEAD"]
    statuses = ["200"] * 12 + ["304", "404", "500", "301"]
    last_percent = lines - lines // 100
    stamps = {}
    with open(path + ".part", "w") as out:
        for base in range(0, lines, 100_000):
            rows = []
            for n in range(base, min(lines, base + 100_000)):
                p = rng.choice(paths)
                if rng.random() < 0.2:
                    p += "?q=" + "x" * rng.randrange(1, 300)
                if n >= last_percent and n % 997 == 0:
                    p += "&" + NEEDLE
                t = 1_700_000_000 + n // 10
                stamp = stamps.get(t)
                if stamp is None:
                    stamps.clear()
                    stamp = stamps[t] = time.strftime("%d/%b/%Y:%H:%M:%S", time.gmtime(t))
                rows.append(f'{rng.choice(ips)} - - [{stamp} +0000] "{rng.choice(methods)} {p} HTTP/1.1" '
                            f'{rng.choice(statuses)} {rng.randrange(0, 99999)} "{rng.choice(agents)}"')
            out.write("\n".join(rows) + "\n")
    os.rename(path + ".part", path)


def line_at(path, number):
    """Line `number` (1-based), by reading up to it (once per run of the benchmark)."""
    with open(path, "rb") as file:
        for index, line in enumerate(file, 1):
            if index == number:
                return line.decode().rstrip("\n")
    raise SystemExit(f"{path} has fewer than {number} lines")


class Session:
    """One program in a detached tmux session, its screen polled."""

    def __init__(self, socket, command, env=None):
        self.socket = socket
        self.name = f"s{time.monotonic_ns()}"
        prefix = " ".join(f"{key}={value}" for key, value in (env or {}).items())
        self.started = time.monotonic()
        self.tmux("new-session", "-d", "-s", self.name, "-x", str(WIDTH), "-y", str(HEIGHT), f"{prefix} exec {command}")
        self.pid = int(self.tmux("display-message", "-p", "-t", self.name, "#{pane_pid}").strip())

    def tmux(self, *args):
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True).stdout

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", self.name).rstrip("\n").split("\n")

    def keys(self, *keys):
        self.tmux("send-keys", "-t", self.name, *keys)

    def type(self, text):
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def wait(self, what, condition, deadline=300):
        """Seconds from now until `condition(screen)` holds."""
        start = time.monotonic()
        while time.monotonic() - start < deadline:
            screen = self.screen()
            if condition(screen):
                return time.monotonic() - start, screen
            time.sleep(0.003)
        raise SystemExit(f"timed out waiting until {what}:\n" + "\n".join(self.screen()))

    def peak_memory_mib(self):
        try:
            with open(f"/proc/{self.pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except FileNotFoundError:
            return float("nan")
        return float("nan")

    def close(self):
        self.tmux("kill-session", "-t", self.name)
        # Until the program has exited: one still tearing down (lnav frees 580 MB) takes the CPU
        # from the next one measured.
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{self.pid}") and time.monotonic() < deadline:
            time.sleep(0.01)


def pty_first_screen(command, text, env):
    """Seconds from starting `command` on a 120x40 pseudo-terminal until `text` is in its output."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", HEIGHT, WIDTH, 0, 0))
    started = time.monotonic()
    process = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                               env={**os.environ, "TERM": "xterm-256color", **env})
    os.close(slave)
    output, wanted = b"", text.encode()
    try:
        while wanted not in output:
            ready, _, _ = select.select([master], [], [], 10)
            if not ready:
                raise SystemExit(f"timed out waiting for the first screen of {command}")
            output += os.read(master, 65536)
        return time.monotonic() - started
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        os.close(master)


def has(text):
    key = text[:60]
    return lambda screen: any(key in row for row in screen)


def numbered(number, text):
    """A row that starts with `number` (as less -N and pages draw it) and holds `text`'s start."""
    key = text[:40]
    pattern = re.compile(rf"^\s*{number}\s")
    return lambda screen: any(pattern.match(row) and key in row for row in screen)


def at_top(number, text, numbered_rows):
    key = text[:40]
    if numbered_rows:
        pattern = re.compile(rf"^\s*{number}\s")
        return lambda screen: bool(pattern.match(screen[1])) and key in screen[1]
    return lambda screen: key in screen[0] or key in screen[1]


def lnav_line(text):
    """lnav shows `text` and the status bar its top line's number (lnav shows nothing before it has
    indexed the file, so the number is exact)."""
    key = text[:40]
    number = re.compile(r"\bL[\d,]+\s")
    return lambda screen: any(key in row for row in screen) and any(number.search(row) for row in screen[-3:])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--file", default=os.path.join(tempfile.gettempdir(), "avenues-pages-bench", "access.log"))
    parser.add_argument("--only", default="open,goto,search,follow")
    parser.add_argument("--static", action="store_true",
                        help="also open the file with pages linked statically (--static-swift-stdlib), as a tool shipped on Linux would be")
    options = parser.parse_args()
    for tool in ["less", "lnav", "tmux"]:
        if shutil.which(tool) is None:
            sys.exit(f"pages-bench: {tool} is required; install it (apt-get install {tool}) and run again")
    subprocess.run(["swift", "build", "--package-path", os.path.join(ROOT, "Examples"), "-c", "release", "--product", "pages"], check=True)
    bin_dir = subprocess.run(["swift", "build", "--package-path", os.path.join(ROOT, "Examples"), "-c", "release", "--show-bin-path"],
                             check=True, capture_output=True, text=True).stdout.strip()
    pages = os.path.join(bin_dir, "pages")
    static_pages = None
    if options.static:
        scratch = os.path.join(ROOT, "Examples", ".build-static")
        subprocess.run(["swift", "build", "--package-path", os.path.join(ROOT, "Examples"), "-c", "release", "--product", "pages",
                        "--static-swift-stdlib", "--scratch-path", scratch], check=True)
        static_pages = os.path.join(scratch, "release", "pages")
    path = options.file
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path) or subprocess.run(["wc", "-l", path], capture_output=True, text=True).stdout.split()[0] != str(options.lines):
        print(f"generating {options.lines:,} lines in {path}…", flush=True)
        generate(path, options.lines)
    size = os.path.getsize(path)
    lines = options.lines
    first, last = line_at(path, 1), None
    with open(path, "rb") as file:
        file.seek(max(0, size - 4096))
        last = file.read().decode(errors="replace").rstrip("\n").split("\n")[-1]
    middle_number = lines // 2
    middle = line_at(path, middle_number)
    hit_number = int(subprocess.run(["grep", "-n", "-m1", NEEDLE, path], capture_output=True, text=True).stdout.split(":")[0])
    hit = line_at(path, hit_number)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL)  # the page cache warm
    print(f"{path}: {lines:,} lines, {size / 1e9:.2f} GB; the needle first at line {hit_number:,}")
    home = tempfile.mkdtemp(prefix="pages-bench-home-")  # lnav keeps state in $HOME
    socket = f"pages-bench-{os.getpid()}"
    only = set(options.only.split(","))
    # A session that outlives the measured ones: the server does not exit (and start again) between them.
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", "keeper", "sleep 1000000"], check=True)
    results = {}

    def record(key, value):
        results.setdefault(key, []).append(value)

    tools = {
        "pages": f"'{pages}' '{path}'",
        "less": f"less '{path}'",
        "less -N": f"less -N '{path}'",
        "lnav": f"lnav '{path}'",
    }
    if static_pages:
        tools["pages static"] = f"'{static_pages}' '{path}'"
    pty_tools = {"pages": [pages, path], "less": ["less", path], "less -N": ["less", "-N", path]}
    if static_pages:
        pty_tools["pages static"] = [static_pages, path]
    try:
        for run in range(options.runs):
            if "open" in only:
                for tool, command in pty_tools.items():
                    record((tool, "first screen, pty"), statistics.median(
                        pty_first_screen(command, first[:40], {"HOME": home}) for _ in range(20)))
                for tool, command in tools.items():
                    session = Session(socket, command, env={"HOME": home})
                    if tool == "lnav":
                        session.wait("lnav's first screen", lambda s: any(" - - [" in row for row in s))
                        record((tool, "first screen"), time.monotonic() - session.started)
                        took, _ = session.wait("lnav's last line with its number", lnav_line(last))
                        record((tool, "G"), time.monotonic() - session.started)
                    else:
                        session.wait(f"{tool}'s first screen", has(first))
                        record((tool, "first screen"), time.monotonic() - session.started)
                        if tool != "less":
                            session.keys("G")
                            took, _ = session.wait(f"{tool}'s last line with its number", numbered(lines, last))
                            record((tool, "G"), took)
                    record((tool, "peak memory"), session.peak_memory_mib())
                    session.close()
            if "goto" in only:
                for tool in ["pages", "less", "lnav"]:
                    session = Session(socket, tools[tool], env={"HOME": home})
                    if tool == "lnav":
                        session.wait("lnav has indexed", lnav_line(last))
                        start = time.monotonic()
                        session.type(":goto 4999999")
                        session.keys("Enter")
                        session.wait("lnav at line 5,000,000", lnav_line(middle))
                        record((tool, ":5000000"), time.monotonic() - start)
                    else:
                        session.wait(f"{tool}'s first screen", has(first))
                        start = time.monotonic()
                        session.type(f":{middle_number}" if tool == "pages" else f"{middle_number}g")
                        if tool == "pages":
                            session.keys("Enter")
                        session.wait(f"{tool} at line {middle_number:,}", at_top(middle_number, middle, tool == "pages"))
                        record((tool, ":5000000"), time.monotonic() - start)
                    session.close()
            if "search" in only:
                for tool in ["pages", "less", "lnav"]:
                    session = Session(socket, tools[tool], env={"HOME": home})
                    if tool == "lnav":
                        session.wait("lnav has indexed", lnav_line(last))
                        session.keys("g")
                        session.wait("lnav at the top", has(first))
                    else:
                        session.wait(f"{tool}'s first screen", has(first))
                    start = time.monotonic()
                    session.type("/" + NEEDLE)
                    session.keys("Enter")
                    if tool == "lnav":  # lnav searches in the background, counting hits; `n` goes to the first found
                        found = re.compile(r"\b[1-9][\d,]* hits? for")
                        session.wait("lnav finds a hit", lambda s: has(hit)(s) or any(found.search(row) for row in s[-3:]))
                        session.keys("n")
                    session.wait(f"{tool} shows the first hit", has(hit))
                    record((tool, "search"), time.monotonic() - start)
                    session.close()
            if "follow" in only:
                for tool in os.environ.get("PAGES_BENCH_FOLLOW", "pages,less +F,lnav").split(","):
                    follow(socket, tool, pages, path, home, record)
            print(f"run {run + 1} of {options.runs} done", flush=True)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)

    print(f"\n{'tool':12} {'measure':22} {'median':>10}   runs")
    for (tool, measure), values in results.items():
        unit = "MiB" if "memory" in measure or "MiB" in measure else ("lines" if "lines" in measure else "s")
        if "first screen" in measure:  # milliseconds, to a tenth: the pty figures are a few of them
            values, unit = [v * 1000 for v in values], "ms"
        shown = [f"{v:.3f}" if unit == "s" else f"{v:.1f}" if unit == "ms" else f"{v:.0f}" for v in values]
        median = statistics.median(values)
        print(f"{tool:12} {measure:22} {median:>10.3f} {unit:5} {', '.join(shown)}")


def follow(socket, tool, pages, source, home, record):
    """The tool follows a copy of the first 1,000,000 lines while 100,000 lines a second are appended
    for 10 s; every line appended says its number (`seq=N`), so the screen's lag is read off it."""
    work = tempfile.mkdtemp(prefix="pages-follow-")
    path = os.path.join(work, "growing.log")
    with open(source, "rb") as src, open(path, "wb") as out:
        for index, line in enumerate(src):
            if index == 1_000_000:
                break
            out.write(line)
    command = {"pages": f"'{pages}' '{path}'", "less +F": f"less +F '{path}'", "lnav": f"lnav '{path}'"}[tool]
    session = Session(socket, command, env={"HOME": home})
    session.wait(f"{tool}'s first screen", lambda s: any(" - - [" in row for row in s))
    if tool == "pages":
        session.wait("pages has counted", lambda s: "of 1000000" in s[-1])
        session.keys("F")
    time.sleep(0.5)
    seq = re.compile(r"seq=(\d+)")
    written = [0]
    stop = threading.Event()

    def writer():
        with open(path, "a") as out:
            start = time.monotonic()
            n = 0
            for tick in range(100):  # 10,000 lines every 100 ms
                batch = "".join(f'10.0.0.1 - - [01/Jan/2024:00:00:00 +0000] "GET /grow?seq={n + i + 1} HTTP/1.1" 200 {i}\n' for i in range(10_000))
                out.write(batch)
                out.flush()
                n += 10_000
                written[0] = n
                delay = start + (tick + 1) * 0.1 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
        stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    worst = 0
    samples = []
    while not stop.is_set():
        behind_writer = written[0]
        shown = [int(m.group(1)) for row in session.screen() for m in [seq.search(row)] if m]
        worst = max(worst, behind_writer - (max(shown) if shown else 0))
        samples.append(behind_writer - (max(shown) if shown else 0))
        if os.environ.get("PAGES_BENCH_VERBOSE"):
            print(f"{tool}: written {behind_writer}, shown {max(shown) if shown else 0}", flush=True)
        time.sleep(0.05)
    thread.join()
    time.sleep(1.0)
    shown = [int(m.group(1)) for row in session.screen() for m in [seq.search(row)] if m]
    record((tool, "follow: lines behind, median"), statistics.median(samples))
    record((tool, "follow: most lines behind"), worst)
    record((tool, "follow: lines behind 1 s after"), written[0] - (max(shown) if shown else 0))
    record((tool, "follow: peak memory"), session.peak_memory_mib())
    session.close()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
