"""TLS on a connection's stream: the handshake, its errors, and what a TLS stream holds.

anyio's TLS module (5 ms of imports) is loaded by the first handshake: a
run that makes none never loads it, and before it no stream is TLS.
"""

from __future__ import annotations

import ssl
import sys
from typing import TYPE_CHECKING

from fetcher.errors import ConnectError
from fetcher.net.deadlines import fail_at

if TYPE_CHECKING:
    import anyio.abc


class TLSError(ConnectError):
    """The TLS handshake failed (certificate, host name, protocol)."""

    transient = False


def is_tls(stream: object) -> bool:
    """Whether `stream` is anyio's TLS stream (False before any handshake loaded the TLS module)."""
    tls = sys.modules.get("anyio.streams.tls")
    return tls is not None and isinstance(stream, tls.TLSStream)


def session(stream: anyio.abc.ByteStream) -> ssl.SSLSession | None:
    """The TLS session of a TLS stream (to resume on another connection), or None."""
    from anyio.streams.tls import TLSAttribute

    ssl_object = stream.extra(TLSAttribute.ssl_object, None)
    return ssl_object.session if ssl_object is not None else None


def pending(stream: anyio.abc.ByteStream) -> bool:
    """Whether a TLS stream holds bytes not read yet: decrypted, or records taken off the socket."""
    from anyio.streams.tls import TLSAttribute

    ssl_object = stream.extra(TLSAttribute.ssl_object, None)
    incoming = getattr(stream, "_read_bio", None)  # records taken off the socket, not yet decrypted
    return bool((ssl_object is not None and ssl_object.pending()) or (incoming is not None and incoming.pending))


async def handshake(
    stream: anyio.abc.ByteStream, context: ssl.SSLContext, server_hostname: str, *, deadline: float, where: str
) -> anyio.abc.ByteStream:
    """`stream` wrapped in TLS, the handshake done by `deadline` (else `TooSlow`); `TLSError` when it fails.

    `where` (host:port) names the peer in the error.
    """
    import anyio

    # standard_compatible=False is trio's https_compatible=True: a server
    # closing without close_notify ends the stream instead of breaking it
    # (HTTP/1.0 bodies delimited by the close do that).
    from anyio.streams.tls import TLSStream

    try:
        with fail_at(deadline):
            wrapped = await TLSStream.wrap(
                stream, hostname=server_hostname, ssl_context=context, standard_compatible=False
            )
    except anyio.EndOfStream:
        raise TLSError(
            f"TLS with {where} failed: the server closed the connection during the handshake",
            hint="check that the port speaks TLS",
        ) from None
    except (anyio.BrokenResourceError, ssl.SSLError) as error:
        cause = error.__cause__ if isinstance(error, anyio.BrokenResourceError) else error
        raise TLSError(
            f"TLS with {where} failed: {cause}",
            hint="check the certificate; --cacert FILE trusts a private CA, --insecure skips checks",
        ) from None
    return wrapped
