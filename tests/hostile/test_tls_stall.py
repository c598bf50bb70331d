"""A TLS handshake the server never answers is part of connecting: --connect-timeout ends it (issue 29, item 19).

The server accepts the TCP connection, reads the ClientHello and says
nothing.  Before the fix the handshake waited for --timeout (a silence of
--timeout per read), so `--connect-timeout 1 --timeout 60` took a minute.
"""

from __future__ import annotations

import time

import pytest

from tests.hostile.checks import cli, one_error_line
from tests.hostile.core_servers import Peer, hostile


async def silent_after_hello(peer: Peer) -> None:
    """Take the ClientHello (and whatever follows) and never answer."""
    await peer.wait_for_close()


@pytest.mark.parametrize("scheme", ["https", "ftps"])
async def test_a_stalled_tls_handshake_ends_at_the_connect_timeout(scheme: str) -> None:
    async with hostile(silent_after_hello) as server:
        started = time.monotonic()
        result = await cli("--connect-timeout", "1", "--timeout", "60", f"{scheme}://127.0.0.1:{server.port}/x.txt")
        took = time.monotonic() - started
        assert await server.all_closed(), "the client kept the stalled connection open"
    assert result.returncode == 8, result.stderr
    line = one_error_line(result.stderr)
    assert f"127.0.0.1:{server.port}" in line and "TLS handshake" in line, line
    assert "took longer than 1 s" in line, line
    assert took < 30, f"the run took {took:.0f} s: the handshake waited for --timeout, not --connect-timeout"
