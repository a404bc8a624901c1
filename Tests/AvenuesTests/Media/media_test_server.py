#!/usr/bin/env python3
"""A small HTTP server for the AsyncMedia tests, on 127.0.0.1 and an ephemeral port; over TLS with
`--tls CERT KEY`.

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
  /hostile/<case>           a raw answer that breaks or stretches HTTP (see HOSTILE below)
  /bomb/<n>                 n zero bytes gzip-encoded (a small body that decodes to a large file)
  /away/<port>/<path>       302 to http://localhost:<port>/<path>: another origin than 127.0.0.1
  /hops/<k>                 302 to /hops/<k-1>, ..., /hops/0 answers 100 bytes
  /reset-on-reuse/<n>       n bytes as /bytes, when it is the first request on its connection; else
                            the connection is reset (RST) without an answer
  /reset-always, /reset-after-head
                            the connection is reset at once, or after the head of an answer
  /resumable/<n>?cut=&chunk=&pause_ms=
                            n bytes with the ETag /set-etag/<value> set (v1 at first) and ranges; a
                            request without Range gets the first `cut` bytes of the announced n, then
                            the connection drops; `chunk` bytes every `pause_ms` ms when given;
                            `ignore_if_range=1`: any Range gets a 206 whatever If-Range says, and
                            the bytes change (each XOR 0x55) once the ETag is not v1
  /set-etag/<value>         the ETag /resumable answers with from now on
  /revalidate/<n>?etag=     n bytes with ETag and Last-Modified; If-None-Match that matches: 304
  /revalidate/<n>?lie=1     n bytes with the ETag /set-etag set (each byte XOR 0x55 once it is not
                            v1); any If-None-Match gets a 304 naming that ETag

/status/204 and /status/304 send no body. Every response to a path records the Accept-Encoding
Range, Authorization, Cookie, X-Api-Key, If-Range and If-None-Match headers it was asked with under
/counts' "headers", and the bytes of body it sent under "sent".
"""
import gzip
import zlib
import json
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

counts = {}
closed = {}
headers = {}
sent_bytes = {}
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
                payload = json.dumps({"requests": counts, "closed": closed, "headers": headers, "order": order, "sent": sent_bytes}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.count(url.path, counts)
        with lock:
            order.append(self.path)
            headers[url.path] = {name.lower(): self.headers.get(name, "") for name in
                                 ("Accept-Encoding", "Range", "Authorization", "Cookie", "X-Api-Key", "If-Range", "If-None-Match", "X-Injected")}
        kind = parts[0]
        size = int(parts[1].split(".")[0]) if len(parts) > 1 and parts[1].split(".")[0].isdigit() else 0
        # Requests this connection carried before this one (one handler serves a connection).
        earlier = getattr(self, "requests_on_connection", 0)
        self.requests_on_connection = earlier + 1
        if kind == "reset-always" or kind == "reset-after-head" or (kind == "reset-on-reuse" and earlier > 0):
            # A kept-alive connection the server drops with a reset when it is used again.
            if kind == "reset-after-head":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
                self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if kind in ("bytes", "reset-on-reuse"):
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
        elif kind == "hostile":
            self.wfile.write(hostile(parts[1] if len(parts) > 1 else ""))
            self.wfile.flush()
            self.close_connection = True
        elif kind == "bomb":
            payload = bomb(size)
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            try:
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
        elif kind == "away":
            self.send_response(302)
            self.send_header("Location", "http://localhost:" + parts[1] + "/" + "/".join(parts[2:]))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif kind == "hops":
            if size > 0:
                self.send_response(302)
                self.send_header("Location", "/hops/%d" % (size - 1))
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.send_response(200)
                self.send_header("Content-Length", "100")
                self.end_headers()
                self.wfile.write(body(100))
        elif kind == "set-etag":
            global RESUMABLE_ETAG
            RESUMABLE_ETAG = parts[1]
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif kind == "resumable":
            query = parse_qs(url.query)
            etag = '"' + RESUMABLE_ETAG + '"'
            # The cut applies to the first request of a path and query only: later ones get it whole.
            with lock:
                first = counts.get(url.path, 0) <= 1 and self.path not in CUT_DONE
                CUT_DONE.add(self.path)
            cut = int(query.get("cut", [str(size)])[0]) if first else size
            chunk = int(query.get("chunk", ["0"])[0])
            pause = int(query.get("pause_ms", ["0"])[0]) / 1000
            wanted = self.headers.get("Range", "")
            if_range = self.headers.get("If-Range")
            # ?ignore_if_range=1: a server (or a cache) that answers any Range with a 206, whatever
            # If-Range says; its file's bytes change with its ETag (v1: the usual ones).
            ignores = "ignore_if_range" in query
            changed = ignores and RESUMABLE_ETAG != "v1"
            def payload(n, start=0):
                data = body(n, start)
                return bytes(b ^ 0x55 for b in data) if changed else data
            if wanted.startswith("bytes=") and (ignores or if_range is None or if_range == etag):
                start = int(wanted[6:].split("-")[0])
                if start >= size:
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */%d" % size)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("ETag", etag)
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size))
                self.send_header("Content-Length", str(size - start))
                self.end_headers()
                self.wfile.write(payload(size - start, start))
                self.record_sent(url.path, size - start)
                return
            self.send_response(200)
            self.send_header("ETag", etag)
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            try:
                if chunk:
                    done = 0
                    while done < cut:
                        piece = min(chunk, cut - done)
                        self.wfile.write(payload(piece, done))
                        self.wfile.flush()
                        done += piece
                        self.record_sent(url.path, piece)
                        time.sleep(pause)
                else:
                    self.wfile.write(payload(cut))
                    self.wfile.flush()
                    self.record_sent(url.path, cut)
            except (BrokenPipeError, ConnectionResetError):
                pass
            if cut < size:
                self.close_connection = True
        elif kind == "revalidate":
            query = parse_qs(url.query)
            if "lie" in query:
                # A server that answers any If-None-Match with a 304, naming its file's ETag now
                # (/set-etag), whose bytes change with it (each XOR 0x55 once it is not v1).
                etag = '"' + RESUMABLE_ETAG + '"'
                if self.headers.get("If-None-Match"):
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                data = body(size)
                if RESUMABLE_ETAG != "v1":
                    data = bytes(b ^ 0x55 for b in data)
                self.send_response(200)
                self.send_header("ETag", etag)
                self.send_header("Content-Length", str(size))
                self.end_headers()
                self.wfile.write(data)
                self.record_sent(url.path, size)
                return
            etag = '"' + query.get("etag", ["v1"])[0] + '"'
            if self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.send_header("ETag", etag)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", "Mon, 02 Nov 2026 10:00:00 GMT")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.wfile.write(body(size))
            self.record_sent(url.path, size)
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


def record_sent(self, path, count):
    with lock:
        sent_bytes[path] = sent_bytes.get(path, 0) + count


Handler.record_sent = record_sent

BOMBS = {}
RESUMABLE_ETAG = "v1"
CUT_DONE = set()


def bomb(n):
    with lock:
        if n not in BOMBS:
            BOMBS[n] = gzip.compress(bytes(n), compresslevel=9)
        return BOMBS[n]


DATA = body(50000)
GZ = gzip.compress(DATA)
RAW_DEFLATE = (lambda c: c.compress(DATA) + c.flush())(zlib.compressobj(wbits=-15))


def chunked(payload, step=1000):
    return b"".join(b"%x\r\n" % len(payload[i:i + step]) + payload[i:i + step] + b"\r\n" for i in range(0, len(payload), step)) + b"0\r\n\r\n"


def hostile(case):
    """Raw answers: every one must be either decoded to DATA or refused, never cached wrong."""
    half = GZ[:len(GZ) // 2]
    answers = {
        "te-identity-chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(DATA),
        "te-gzip": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + chunked(GZ),
        "te-gzip-close": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n" + GZ,
        "ce-twice": b"HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(GZ) + GZ,
        "gzip-half-chunked": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(half),
        "gzip-half-close": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n" + half,
        "gzip-no-trailer": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % (len(GZ) - 8) + GZ[:-8],
        "continue": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 50000\r\n\r\n" + DATA,
        "chunk-space": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1 0\r\n" + b"x" * 16 + b"\r\n0\r\n\r\n",
        "empty-length": b"HTTP/1.1 200 OK\r\nContent-Length: \r\nConnection: close\r\n\r\n" + DATA,
        "two-lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 50000\r\nContent-Length: 3\r\n\r\n" + DATA,
        "brotli": b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 5\r\n\r\nhello",
        "retry-forever": b"HTTP/1.1 503 Busy\r\nRetry-After: 9223372036854775807000\r\nContent-Length: 0\r\n\r\n",
        "unasked-206": b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-4/50000\r\nContent-Length: 5\r\n\r\n" + DATA[:5],
        "length-overflow": b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n" + DATA,
        "length-plus": b"HTTP/1.1 200 OK\r\nContent-Length: +50000\r\n\r\n" + DATA,
        "length-negative": b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\nConnection: close\r\n\r\n" + DATA,
        "status-garbage": b"HTTP/1.1 2x0 OK\r\nContent-Length: 50000\r\n\r\n" + DATA,
        "status-huge": b"HTTP/1.1 99999999999999999999 OK\r\nContent-Length: 50000\r\n\r\n" + DATA,
        "header-bomb": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 100) for i in range(20000)) + b"Content-Length: 50000\r\n\r\n" + DATA,
        "hints-flood": b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" * 5000 + b"HTTP/1.1 200 OK\r\nContent-Length: 50000\r\n\r\n" + DATA,
        "deflate-raw": b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: %d\r\n\r\n" % len(RAW_DEFLATE) + RAW_DEFLATE,
        "gzip-trailing-garbage": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % (len(GZ) + 7) + GZ + b"garbage",
        "gzip-empty": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n\r\n",
        "chunk-ext": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"".join(b"%x;name=value\r\n" % len(DATA[i:i + 1000]) + DATA[i:i + 1000] + b"\r\n" for i in range(0, len(DATA), 1000)) + b"0\r\n\r\n",
        "chunk-overflow": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\n" + DATA + b"\r\n0\r\n\r\n",
        "no-reason": b"HTTP/1.1 200\r\nContent-Length: 50000\r\n\r\n" + DATA,
        "nul-in-header": b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 50000\r\n\r\n" + DATA,
        "bare-lf": b"HTTP/1.1 200 OK\nContent-Length: 50000\n\n" + DATA,
        "location-file": b"HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\n\r\n",
        "http09": DATA,
        "http2-status": b"HTTP/2 200\r\nContent-Length: 50000\r\n\r\n" + DATA,
    }
    return answers.get(case, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if len(sys.argv) == 4 and sys.argv[1] == "--tls":  # --tls CERT KEY: https instead of http
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"PORT {server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # the test closes stdin (or exits) to stop the server
    server.shutdown()


if __name__ == "__main__":
    main()
