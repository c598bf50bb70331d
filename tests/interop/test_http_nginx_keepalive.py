"""A pipelined bulk run against a real nginx that ends each connection after 40 requests (issue 29, item 11).

`keepalive_requests 40`: nginx answers the 40th request of a connection
with `Connection: close`, drops the requests pipelined behind it and closes.
A run of 100 files stopped at 72 there, spinning (plain and over TLS);
every file must arrive, each asked for and answered once.
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trustme

from tests.conftest import require, run_fetch
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.nginx_server import Nginx, find_nginx, run_nginx
from tests.interop.processes import free_port

pytestmark = pytest.mark.interop

COUNT = 100
LIMIT = 40
NO_PROXY_ENV = {"http_proxy": "", "https_proxy": "", "HTTPS_PROXY": "", "no_proxy": "", "NO_PROXY": ""}


def _body(index: int) -> bytes:
    return hashlib.sha256(b"%d" % index).digest() * (1 + index % 50)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Nginx, int, Path]]:
    """nginx with keepalive_requests 40, plain and TLS, over COUNT files; (server, TLS port, CA file)."""
    binary = find_nginx()
    require(binary is not None, "nginx", "apt-get install nginx-light")
    assert binary is not None
    base = public_tempdir("fetcher-keepalive-")
    try:
        content = base / "content"
        content.mkdir()
        for index in range(COUNT):
            (content / f"f{index}.bin").write_bytes(_body(index))
            (content / f"f{index}.bin").chmod(0o644)
        ca = trustme.CA()
        issued = ca.issue_cert("127.0.0.1")
        certificate, key, authority = base / "cert.pem", base / "key.pem", base / "ca.pem"
        issued.cert_chain_pems[0].write_to_path(str(certificate))
        issued.private_key_pem.write_to_path(str(key))
        ca.cert_pem.write_to_path(str(authority))
        tls_port = free_port()
        with run_nginx(content, nginx=binary, keepalive_requests=LIMIT, tls=(tls_port, certificate, key)) as nginx:
            yield nginx, tls_port, authority
    finally:
        remove_tree(base)


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_every_file_once_when_nginx_closes_after_40_requests(
    served: tuple[Nginx, int, Path], tmp_path: Path, scheme: str
) -> None:
    nginx, tls_port, authority = served
    port = nginx.port if scheme == "http" else tls_port
    listing = tmp_path / "urls.txt"
    listing.write_text("".join(f"{scheme}://127.0.0.1:{port}/f{index}.bin\n" for index in range(COUNT)))
    before = len(nginx.access_log())
    run = functools.partial(run_fetch, "-i", str(listing), "-d", str(tmp_path / "out"), "--cacert", str(authority),
                            timeout=60, env=NO_PROXY_ENV)  # fmt: skip
    try:
        result = await trio.to_thread.run_sync(run)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the run did not end within 60 s ({len(list((tmp_path / 'out').iterdir()))} files)")
    assert result.returncode == 0, result.stderr
    for index in range(COUNT):
        assert (tmp_path / "out" / f"f{index}.bin").read_bytes() == _body(index), index
    with trio.fail_after(10):
        while len(nginx.access_log()) - before < COUNT:  # nginx writes its log as each request ends
            await trio.sleep(0.05)
    rows = nginx.access_log()[before:]
    answered = Counter(row[2] for row in rows if row[3] == "200")
    assert set(answered.values()) == {1} and len(answered) == COUNT, answered
    assert max(int(row[1]) for row in rows) == LIMIT  # pipelined: connections were used to nginx's limit
