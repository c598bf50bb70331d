"""The network room (issue 30): the former `fetcher.net` names, a light package, the guarded UDP endpoint."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

import fetcher.net
from fetcher.errors import UnsafeURL
from fetcher.guard import DEFAULT_POLICY
from fetcher.net import budget, connect, connection, deadlines, lines, stream, tls, tracing
from fetcher.net.udp import open_udp
from tests.conftest import ROOT


def test_the_former_module_names_still_import_from_fetcher_net() -> None:
    assert fetcher.net.Connection is connection.Connection
    assert fetcher.net.open_connection is connect.open_connection
    assert fetcher.net.dial is connect.dial
    assert fetcher.net.Budget is budget.Budget
    assert fetcher.net.current_budget is budget.current_budget
    assert fetcher.net.TooSlow is deadlines.TooSlow
    assert fetcher.net.fail_after is deadlines.fail_after
    assert fetcher.net.TLSError is tls.TLSError
    assert fetcher.net.trace is tracing.trace
    assert fetcher.net.RECEIVE_SIZE == stream.RECEIVE_SIZE
    assert fetcher.net.MAX_LINE == lines.MAX_LINE
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        fetcher.net.nothing  # noqa: B018


def test_importing_the_package_loads_no_socket_or_loop_code() -> None:
    wanted = "('fetcher', 'trio', 'anyio')"
    probe = f"import sys, fetcher.net; print(*sorted(m for m in sys.modules if m.startswith({wanted})))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["fetcher", "fetcher.lazy", "fetcher.net"]  # fetcher.lazy: its lazy exports


async def test_the_udp_endpoint_refuses_a_refused_port_before_any_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[object] = []
    real = socket.socket

    def recorded(*args: object, **kwargs: object) -> socket.socket:
        made.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "socket", recorded)
    with pytest.raises(UnsafeURL, match="25"):
        async with open_udp("127.0.0.1", 25, scheme="prospero", policy=DEFAULT_POLICY, default_port=1525):
            pass
    assert made == []


async def test_a_new_target_of_the_udp_endpoint_passes_the_guard_again() -> None:
    async with open_udp("127.0.0.1", 1525, scheme="prospero", policy=DEFAULT_POLICY, default_port=1525) as endpoint:
        with pytest.raises(UnsafeURL, match="redirect port"):
            endpoint.retarget(("127.0.0.1", 25))
        assert endpoint.address[1] == 1525
        endpoint.retarget(("127.0.0.1", 1526))
        assert endpoint.address == ("127.0.0.1", 1526)
