"""What the terminal tests share: a private tmux server, screen polling against a deadline, and the
check that a program left the terminal as it found it.

Every wait polls `tmux capture-pane` against a deadline; nothing sleeps "long enough".
"""
import os
import re
import subprocess
import sys
import time

DEADLINE = 60.0


def fail(message, screen=None):
    print("FAIL:", message)
    if screen is not None:
        print("---- screen ----\n" + "\n".join(screen) + "\n----------------")
    sys.exit(1)


class Tmux:
    def __init__(self):
        self.socket = f"avenues-test-{os.getpid()}"

    def run(self, *args, check=True):
        return subprocess.run(["tmux", "-L", self.socket, *args], check=check, capture_output=True, text=True)

    def start(self, name, command, width=120, height=40):
        self.run("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), command)

    def screen(self, name):
        return self.run("capture-pane", "-p", "-t", name).stdout.rstrip("\n").split("\n")

    def keys(self, name, *keys):
        self.run("send-keys", "-t", name, *keys)

    def display(self, name, fmt):
        return self.run("display-message", "-p", "-t", name, fmt).stdout.strip()

    def close(self):
        self.run("kill-server", check=False)

    def wait(self, name, what, condition, deadline=DEADLINE):
        end = time.monotonic() + deadline
        screen = []
        while time.monotonic() < end:
            screen = self.screen(name)
            if condition(screen):
                return screen
            time.sleep(0.02)
        fail(f"timed out after {deadline:.0f} s waiting until {what}", screen)


def exited(screen):
    """The program has exited and `stty -a` has printed the terminal's modes after it
    (start it as `PROGRAM; echo EXIT=$?; stty -a; sleep 120`)."""
    return any(line.startswith("EXIT=") for line in screen) and any("icanon" in line for line in screen)


def terminal_is_sane(tmux, name, screen, program="the program", status=0):
    """Fails unless the program exited with `status` (any when `None`) and left canonical mode,
    echo, signals, the cursor and the main screen as they were."""
    if status is not None and not any(line.startswith(f"EXIT={status}") for line in screen):
        fail(f"{program} did not exit with status {status}", screen)
    modes = set(re.split(r"[\s;]+", " ".join(screen)))  # stty -a prints e.g. "icanon", "-echonl"
    for flag in ("icanon", "echo", "isig"):
        if flag not in modes or f"-{flag}" in modes:
            fail(f"the terminal was left without {flag}", screen)
    cursor, alternate = tmux.display(name, "#{cursor_flag} #{alternate_on}").split()
    if cursor != "1":
        fail("the cursor was left hidden", screen)
    if alternate != "0":
        fail("the alternate screen was left on", screen)
