"""A private nginx for the interop tests and benchmarks: generated config, temp state dir, free port.

nginx runs in the foreground (`daemon off`) as our child, with its pid
file, logs and temp paths under the state directory, listening only on
127.0.0.1.  The locations mirror what the tests need: static files with
ranges, gzip for text, /chunked/ (an alias whose never-matching sub_filter
drops Content-Length), /limited/ (110 MiB/s, a 1 Gbit/s link's pace), /rate/ (?rate=300m: any pace),
/redirect-* and /status/*.  The access log records
the connection serial number of every request, so a test can prove
keep-alive reuse from the server's side.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.interop.content import public_tempdir, remove_tree
from tests.interop.processes import Server, free_port

MIME_TYPES = Path("/etc/nginx/mime.types")


def find_nginx() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)


def config(content: Path, state: Path, port: int, *, ftp_port: int = 21, keepalive_requests: int = 10000,
           tls: tuple[int, Path, Path] | None = None) -> str:  # fmt: skip
    """The nginx.conf text (see the module docstring).

    `keepalive_requests`: replies per connection before nginx closes it (its
    own default is 1,000); `tls`: (port, certificate, key) to listen on with
    TLS as well.
    """
    tls_listen = ""
    if tls is not None:
        tls_listen = f"listen 127.0.0.1:{tls[0]} ssl; ssl_certificate {tls[1]}; ssl_certificate_key {tls[2]};"
    chain = "\n".join(
        f"        location = /redirect-chain/{i} {{ return 302 /redirect-chain/{i - 1}; }}" for i in range(1, 21)
    )
    types = f"include {MIME_TYPES};" if MIME_TYPES.exists() else "types { text/plain txt; text/html html; }"
    user = "user nobody nogroup;" if os.geteuid() == 0 else ""
    return f"""
daemon off;
master_process on;
worker_processes 1;
{user}
pid {state}/nginx.pid;
error_log {state}/logs/error.log info;
events {{ worker_connections 256; }}
http {{
    types_hash_max_size 2048;
    {types}
    default_type application/octet-stream;
    log_format conn '$connection $connection_requests "$request" $status $body_bytes_sent';
    access_log {state}/logs/access.log conn;
    log_format validators '"$request" $status $body_bytes_sent "$http_if_none_match" "$http_if_modified_since"';
    access_log {state}/logs/validators.log validators;
    client_body_temp_path {state}/tmp/body;
    proxy_temp_path       {state}/tmp/proxy;
    fastcgi_temp_path     {state}/tmp/fastcgi;
    uwsgi_temp_path       {state}/tmp/uwsgi;
    scgi_temp_path        {state}/tmp/scgi;
    sendfile on;
    keepalive_timeout 65s;
    keepalive_requests {keepalive_requests};
    server_tokens on;
    gzip on;
    gzip_min_length 20;
    gzip_comp_level 5;
    gzip_proxied any;
    gzip_vary on;
    gzip_types text/plain text/css application/json application/javascript text/xml application/xml;

    server {{
        listen 127.0.0.1:{port};
        {tls_listen}
        server_name 127.0.0.1 localhost;
        root {content};
        index index.html;
        autoindex on;
        autoindex_exact_size on;

        location = /redirect-301      {{ return 301 /hello.txt; }}
        location = /redirect-301-rel  {{ absolute_redirect off; return 301 /hello.txt; }}
        location = /redirect-301-relpath {{ absolute_redirect off; return 301 a/b/c/deep.txt; }}
        location = /redirect-301-abs  {{ return 301 http://127.0.0.1:{port}/hello.txt; }}
        location = /redirect-302-ftp  {{ return 302 ftp://127.0.0.1:{ftp_port}/hello.txt; }}
        location = /redirect-302-file {{ return 302 file:///etc/passwd; }}
        location = /redirect-302-redis {{ return 302 gopher://127.0.0.1:6379/_save; }}
        location = /redirect-307      {{ return 307 /hello.txt; }}
        location = /redirect-loop     {{ return 302 /redirect-loop; }}
        location = /redirect-chain/0  {{ return 302 /hello.txt; }}
{chain}
        location = /return-200 {{
            default_type text/plain;
            return 200 "fixed body from return\\n";
        }}
        location = /status/404 {{ return 404; }}
        location = /status/500 {{ return 500; }}
        location = /status/503 {{ return 503; }}

        location /limited/ {{
            alias {content}/;
            limit_rate 110m;  # about what 1 Gbit/s Ethernet carries (bench/warc_overhead.py)
        }}

        location /rate/ {{
            alias {content}/;
            limit_rate $arg_rate;  # /rate/FILE?rate=300m: any pace (bench/warc_overhead.py --rates)
        }}

        location /chunked/ {{
            alias {content}/;
            gzip off;
            sub_filter_types *;
            sub_filter '@@never-matches@@' '';
        }}
    }}
}}
"""


@dataclass
class Nginx:
    port: int
    state: Path
    server: Server

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def access_log(self) -> list[list[str]]:
        """Rows of (connection serial, requests on it, request line, status, bytes)."""
        rows = []
        for line in (self.state / "logs" / "access.log").read_text(errors="replace").splitlines():
            serial, count, rest = line.split(" ", 2)
            request, _, tail = rest[1:].partition('" ')
            status, sent = tail.split()
            rows.append([serial, count, request, status, sent])
        return rows

    def validators_log(self) -> list[tuple[str, int, int, str, str]]:
        """(request line, status, body bytes sent, If-None-Match, If-Modified-Since) of every request ("-": none)."""
        rows = []
        for line in (self.state / "logs" / "validators.log").read_text(errors="replace").splitlines():
            found = _VALIDATORS.fullmatch(line)
            assert found is not None, line
            request, status, sent, none_match, since = found.groups()
            rows.append((request, int(status), int(sent), none_match, since))
        return rows


#: A line of the validators log (nginx escapes a quote inside a value as \x22).
_VALIDATORS = re.compile(r'"([^"]*)" (\d+) (\d+) "([^"]*)" "([^"]*)"')


@contextmanager
def run_nginx(content: Path, *, nginx: str, ftp_port: int = 21, keepalive_requests: int = 10000,
              tls: tuple[int, Path, Path] | None = None) -> Iterator[Nginx]:  # fmt: skip
    """Start nginx on a free port serving `content`; stop it and remove its state on exit (`config` for the rest)."""
    state = public_tempdir("fetcher-nginx-")
    try:
        for sub in ("logs", "tmp/body", "tmp/proxy", "tmp/fastcgi", "tmp/uwsgi", "tmp/scgi"):
            (state / sub).mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            for sub in (state / "tmp").rglob("*"):
                shutil.chown(sub, "nobody")
        port = free_port()
        conf = state / "nginx.conf"
        conf.write_text(config(content, state, port, ftp_port=ftp_port, keepalive_requests=keepalive_requests,
                               tls=tls))  # fmt: skip
        argv = [nginx, "-p", str(state), "-c", str(conf), "-e", str(state / "logs" / "error.log")]
        check = subprocess.run([*argv, "-t"], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"nginx -t failed:\n{check.stderr}")
        server = Server(argv, port, log=state / "logs" / "stdout.log")
        try:
            yield Nginx(port=port, state=state, server=server)
        finally:
            server.stop()
    finally:
        remove_tree(state)
