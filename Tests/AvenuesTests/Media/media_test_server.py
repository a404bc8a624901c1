#!/usr/bin/env python3
"""A small HTTP server for the AsyncMedia tests, on 127.0.0.1 and an ephemeral port.

Prints "PORT <n>" once listening, then serves until killed or stdin closes.

  /bytes/<n>[.ext]          n deterministic bytes (byte i is (i * 31 + 7) % 251), with Content-Length
  /drip/<n>?chunk=&pause_ms= the same bytes, slowly: `chunk` bytes every `pause_ms` milliseconds
  /status/<code>            that status, with a short body
  /short/<n>                announces n bytes, sends half, then closes the connection
  /gzip/<n>                 the n bytes gzip-encoded, with Content-Length of the encoded body, whatever
                            the client accepts (as a server with `gzip on` for every client would)
  /chunked/<n>              the n bytes in chunks of 1000 (Transfer-Encoding: chunked)
  /close/<n>                the n bytes, no length: the body ends when the connection closes
  /endless?pause_ms=        a body that never ends: 1 KiB every pause_ms milliseconds
  /stall/<n>                announces n bytes, sends 10, then sends nothing more (never closes)
  /redirect/<path>          302 to /<path>
  /busy/<seconds>           503 with Retry-After: <seconds>
  /counts                   JSON: requests per path, connections closed by the client mid-body, and
                            every request's path and query in the order they arrived ("order")

/status/204 and /status/304 send no body. Every response to a path records the Accept-Encoding
and Range headers it was asked with under /counts' "headers".
"""
import gzip
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

counts = {}
closed = {}
headers = {}
order = []
lock = threading.Lock()


PERIOD = bytes((i * 31 + 7) % 251 for i in range(251))


def body(n, start=0):
    offset = start % 251
    return (PERIOD * ((offset + n) // 251 + 1))[offset:offset + n]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass  # quiet

    def count(self, path, table):
        with lock:
            table[path] = table.get(path, 0) + 1

    def send_body_streaming(self, total, chunk, pause):
        sent = 0
        try:
            while sent < total:
                size = min(chunk, total - sent)
                self.wfile.write(body(size, sent))
                self.wfile.flush()
                sent += size
                if pause:
                    time.sleep(pause)
        except (BrokenPipeError, ConnectionResetError):
            self.count(self.path.split("?")[0], closed)
            self.close_connection = True

    def do_GET(self):
        url = urlparse(self.path)
        parts = url.path.strip("/").split("/")
        if url.path == "/counts":
            with lock:
                payload = json.dumps({"requests": counts, "closed": closed, "headers": headers, "order": order}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.count(url.path, counts)
        with lock:
            order.append(self.path)
            headers[url.path] = {"accept-encoding": self.headers.get("Accept-Encoding", ""), "range": self.headers.get("Range", "")}
        kind = parts[0]
        size = int(parts[1].split(".")[0]) if len(parts) > 1 and parts[1].split(".")[0].isdigit() else 0
        if kind == "bytes":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.send_body_streaming(size, 1 << 20, 0)
        elif kind == "drip":
            query = parse_qs(url.query)
            chunk = int(query.get("chunk", ["4096"])[0])
            pause = int(query.get("pause_ms", ["20"])[0]) / 1000
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.send_body_streaming(size, chunk, pause)
        elif kind == "status":
            code = int(parts[1])
            if code in (204, 304):
                self.send_response(code)
                self.end_headers()
                return
            payload = f"status {code}\n".encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        elif kind == "gzip":
            payload = gzip.compress(body(size))
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        elif kind == "chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            sent = 0
            while sent < size:
                piece = body(min(1000, size - sent), sent)
                self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
                sent += len(piece)
            self.wfile.write(b"0\r\n\r\n")
        elif kind == "close":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body(size))
            self.wfile.flush()
            self.close_connection = True
        elif kind == "endless":
            pause = int(parse_qs(url.query).get("pause_ms", ["20"])[0]) / 1000
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                sent = 0
                while True:
                    self.wfile.write(body(1024, sent))
                    self.wfile.flush()
                    sent += 1024
                    time.sleep(pause)
            except (BrokenPipeError, ConnectionResetError):
                self.count(url.path, closed)
                self.close_connection = True
        elif kind == "stall":
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.wfile.write(body(10))
            self.wfile.flush()
            try:
                while not self.rfile.read(1) == b"":
                    pass  # wait until the client gives up and closes
            except (ConnectionResetError, OSError):
                pass
            self.count(url.path, closed)
            self.close_connection = True
        elif kind == "busy":
            self.send_response(503)
            self.send_header("Retry-After", str(size))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif kind == "redirect":
            self.send_response(302)
            self.send_header("Location", "/" + "/".join(parts[1:]) + ("?" + url.query if url.query else ""))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif kind == "short":
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.wfile.write(body(size // 2))
            self.wfile.flush()
            self.close_connection = True
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # the test closes stdin (or exits) to stop the server
    server.shutdown()


if __name__ == "__main__":
    main()
