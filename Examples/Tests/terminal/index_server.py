#!/usr/bin/env python3
"""A folder index server for browse's tests: Python's own http.server over ROOT, on 127.0.0.1 and a
free port (printed on the first line), plus answers no real folder gives:

  /hostile/        an index whose links try to leave the folder or carry odd names
  /redirect-out/   302 to another host (browse must not follow)
  /redirect-in/    301 to /hostile/ (inside: followed)
  /broken/         a folder whose listing answers 500
  /hostile/gone.txt, /hostile/fails.txt   404 and 500 for files
  /endless/...     every folder lists two subfolders, for ever (and no file)
  /notindex/       an ordinary page with links: not a folder index
  /placeholder/    a folder whose index.html is a placeholder page
  /upper/          an index written in capitals: <A HREF=...>, one tag split over two lines
  /huge/           a 20 MB listing
  /bytes/          an index of names that are not UTF-8 (%FF)

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


def endless(path):
    return ("<html><head><title>Index of %s</title></head><body><pre>"
            '<a href="a/">a/</a>\n<a href="b/">b/</a>\n</pre></body></html>' % path).encode()


UPPER = b"""<HTML><HEAD><TITLE>Index of /upper/</TITLE></HEAD><BODY><PRE>
<A HREF="ONE.TXT">ONE.TXT</A>
<A
HREF=two.txt>two.txt</A>
</PRE></BODY></HTML>
"""

BYTES = b"""<html><head><title>Index of /bytes/</title></head><body><pre>
<a href="caf%E9.txt">caf?.txt</a>
<a href="ok.txt">ok.txt</a>
</pre></body></html>
"""

HUGE = b"<html><head><title>Index of /huge/</title></head><body><pre>" + b"".join(
    b'<a href="f%07d.txt">f%07d.txt</a>\n' % (n, n) for n in range(700_000)) + b"</pre></body></html>"


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
        if path.startswith("/endless/"):
            return self.answer(200, endless(path), [("Content-Type", "text/html")])
        if path == "/notindex/":
            return self.answer(200, b"<html><head><title>Welcome</title></head><body><a href='about.html'>About</a> <a href='news/'>News</a></body></html>")
        if path == "/placeholder/":
            return self.answer(200, b"<html><body><h1>It works!</h1></body></html>")
        if path == "/upper/":
            return self.answer(200, UPPER, [("Content-Type", "text/html")])
        if path in ("/upper/ONE.TXT", "/upper/two.txt", "/bytes/caf%E9.txt", "/bytes/ok.txt"):
            return self.answer(200, b"content\n")
        if path == "/bytes/":
            return self.answer(200, BYTES, [("Content-Type", "text/html")])
        if path == "/huge/":
            return self.answer(200, HUGE, [("Content-Type", "text/html")])
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
