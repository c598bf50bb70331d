"""Who logs in to an FTP server, the key its control connection is pooled under, and the login itself.

§3.2.1: the URL's user, else -u or ~/.netrc, else anonymous.  §3.2.5:
control connections are pooled per (scheme, host, port, login user,
explicit TLS); `pool_key` is the one place that key is built, so the task
path (handler) and the bulk lane (lane) give and take the same connections.
"""

from __future__ import annotations

from dataclasses import dataclass

from fetcher.handler import Session
from fetcher.schemes.ftp.control import Control
from fetcher.url import FtpURL

#: The anonymous password when neither --anon-password nor $FETCH_EMAIL gives one.
DEFAULT_ANON_PASSWORD = "anonymous@"

#: (scheme, host, port, login user, explicit TLS): see `pool_key`.
PoolKey = tuple[str, str, int, str, bool]


@dataclass(frozen=True)
class Login:
    user: str
    password: str | None


def choose_login(url: FtpURL, session: Session) -> Login:
    """§3.2.1: the URL's user; else -u or ~/.netrc for the host; else anonymous."""
    found = session.credentials(url.host)
    if url.user is not None:
        password = url.password
        if password is None and found is not None and found[0] == url.user:
            password = found[1]
        return Login(url.user, password)
    if found is not None:
        return Login(found[0], found[1])
    return Login("anonymous", session.settings.anon_password or DEFAULT_ANON_PASSWORD)


def pool_key(url: FtpURL, user: str, *, explicit_tls: bool) -> PoolKey:
    """The pool key of a control connection logged in as `user` for `url`.

    Every URL path is relative to the login directory (§3.2.5), and a
    reused connection goes back there first, so any connection to the
    same server, as the same user, with the same protection, serves:
    `ftps:` (implicit TLS) differs from `ftp:` by its scheme, AUTH TLS
    (--ftp-tls) by `explicit_tls`.  The password is not part of it: the
    server accepted the one the connection logged in with.
    """
    return (url.scheme, url.host, url.port, user, explicit_tls)


async def take_pooled(session: Session, key: PoolKey) -> Control | None:
    """An idle control connection pooled under `key`, marked as reused; None when the pool holds none.

    Reused, a failure before its first reply means the server closed it
    while it was idle (`StaleControl`): the caller reconnects.
    """
    pooled = await session.pool.take(key)
    if not isinstance(pooled, Control):
        return None
    pooled.reused = True
    return pooled


async def connect(url: FtpURL, session: Session, login: Login, *, implicit: bool, explicit: bool) -> Control:
    """A new control connection: greeting, AUTH TLS (`explicit`), login, PROT P, and PWD for the way home."""
    conn = await session.connect(url.host, url.port, scheme=url.scheme, tls=implicit)
    control = Control(conn, limits=session.settings.limits)
    where = f"{url.host}:{url.port}"
    try:
        await control.greet()
        if explicit:
            await control.auth_tls(session.ssl_context(), url.host)
        await control.login(login.user, login.password, session.settings.ftp_account, session.ask, where)
        if implicit or explicit:
            await control.protect()
        await control.remember_home()
    except BaseException:
        await control.aclose()
        raise
    return control
