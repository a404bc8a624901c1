#!/usr/bin/env python3
"""A small HTTP server for the AsyncMedia tests, on 127.0.0.1 and an ephemeral port.

Prints "PORT <n>" once listening, then serves until killed or stdin closes.

  /bytes/<n>[.ext]          n deterministic bytes (byte i is (i * 31 + 7) % 251), with Content-Length
  /drip/<n>?chunk=&pause_ms= the same bytes, slowly: `chunk` bytes every `pause_ms` milliseconds
  /status/<code>            that status, with a short body
  /short/<n>                announces n bytes, sends half, then closes the connection
  /counts                   JSON: requests per path, and connections closed by the client mid-body
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

counts = {}
closed = {}
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
                payload = json.dumps({"requests": counts, "closed": closed}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.count(url.path, counts)
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
            payload = f"status {code}\n".encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
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
