#!/usr/bin/env python3
"""A folder index server for browse's tests: Python's own http.server over ROOT, on 127.0.0.1 and a
free port (printed on the first line), plus answers no real folder gives:

  /hostile/        an index whose links try to leave the folder or carry odd names
  /redirect-out/   302 to another host (browse must not follow)
  /redirect-in/    301 to /hostile/ (inside: followed)
  /broken/         a folder whose listing answers 500
  /hostile/gone.txt, /hostile/fails.txt   404 and 500 for files

Usage: index_server.py ROOT
"""
import functools
import http.server
import signal
import sys

HOSTILE = b"""<!DOCTYPE HTML><html><head><title>Directory listing for /hostile/</title></head><body><ul>
<li><a href="../">../</a></li>
<li><a href="../../etc/passwd">../../etc/passwd</a></li>
<li><a href="/etc/">/etc/</a></li>
<li><a href="http://192.0.2.1/hostile/x.txt">elsewhere</a></li>
<li><a href="?C=N;O=D">Name</a></li>
<li><a href="%2E%2E/secret.txt">encoded dots</a></li>
<li><a href="a%2Fb.txt">encoded slash</a></li>
<li><a href="esc%1B%5B31mred.txt">escape</a></li>
<li><a href="LONG.txt">long</a></li>
<li><a href="ok.txt">ok.txt</a></li>
<li><a href="gone.txt">gone.txt</a></li>
<li><a href="fails.txt">fails.txt</a></li>
<li><a href="broken/">broken/</a></li>
</ul></body></html>
""".replace(b"LONG", b"L" * 300)


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        sys.stderr.write("%s\n" % (format % args))

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/hostile/":
            return self.answer(200, HOSTILE, [("Content-Type", "text/html")])
        if path == "/hostile/ok.txt" or path.startswith("/hostile/esc") or path.startswith("/hostile/LLL"):
            return self.answer(200, b"fine\n")
        if path == "/hostile/gone.txt":
            return self.answer(404, b"not here")
        if path in ("/hostile/fails.txt", "/hostile/broken/", "/broken/"):
            return self.answer(500, b"broken")
        if path == "/redirect-out/":
            return self.answer(302, headers=[("Location", "http://192.0.2.1/")])
        if path == "/redirect-in/":
            return self.answer(301, headers=[("Location", "/hostile/")])
        return super().do_GET()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    # A parent that blocks or ignores SIGTERM passes that on to its children: undo it, so the tests
    # can stop us.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    handler = functools.partial(Handler, directory=sys.argv[1])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
