"""nginx on 127.0.0.1 for the remote tests: autoindex over a folder, plain or TLS, and a test CA
made with openssl for the TLS server."""
import os
import socket
import subprocess
import time

from tmuxlib import fail


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Nginx:
    """nginx in the foreground (one process, this user), autoindex on over `root`; over TLS with
    `tls=(certificate, key)`. Its access log records each request's status and body bytes."""

    def __init__(self, root, work, tls=None):
        self.port = free_port()
        self.log = os.path.join(work, "access.log")
        config = os.path.join(work, "nginx.conf")
        with open(config, "w") as file:
            file.write(f"""
daemon off;
master_process off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 256; }}
http {{
    log_format counted '$status $body_bytes_sent $connection $request_uri';
    access_log {self.log} counted;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    types {{ text/plain txt; }}
    default_type application/octet-stream;
    server {{
        listen 127.0.0.1:{self.port}{" ssl" if tls else ""};
        {f"ssl_certificate {tls[0]}; ssl_certificate_key {tls[1]};" if tls else ""}
        root {root};
        location / {{ autoindex on; }}
    }}
}}
""")
        self.process = subprocess.Popen(["nginx", "-c", config, "-p", work], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None:
                    fail("nginx did not start: " + self.process.stderr.read().decode(errors="replace"))
                time.sleep(0.05)
        else:
            fail("nginx did not start listening within 10 s")
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/"

    def requests(self):
        with open(self.log) as log:
            return sum(1 for _ in log)

    def entries(self):
        """(status, body bytes, path, connection serial number) of every request so far."""
        with open(self.log) as log:
            return [(int(status), int(size), path, int(connection))
                    for status, size, connection, path in (line.rstrip("\n").split(" ", 3) for line in log)]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


def make_test_ca(folder):
    """A CA and a certificate for 127.0.0.1 signed by it, made with openssl in `folder`; returns
    (CA certificate, server certificate, server key) paths."""
    ca_key, ca, key, request, certificate = (os.path.join(folder, name) for name in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    extensions = os.path.join(folder, "server.ext")
    with open(extensions, "w") as file:
        file.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    quiet = dict(capture_output=True, check=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
                    "-subj", "/CN=Avenues test CA"], **quiet)
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", request, "-subj", "/CN=127.0.0.1"], **quiet)
    subprocess.run(["openssl", "x509", "-req", "-in", request, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", certificate,
                    "-days", "2", "-extfile", extensions], **quiet)
    return ca, certificate, key


def build_media_bench():
    """Builds the Benchmarks package's `media-bench` in release (for the download benchmarks, which
    run it beside curl against this nginx) and returns its path."""
    package = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "Benchmarks")
    subprocess.run(["swift", "build", "--package-path", package, "-c", "release", "--product", "media-bench"], check=True,
                   stdout=subprocess.DEVNULL)
    path = subprocess.run(["swift", "build", "--package-path", package, "-c", "release", "--show-bin-path"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return os.path.join(path, "media-bench")
