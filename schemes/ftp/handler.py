"""ftp:// and ftps:// URLs exactly as RFC 1738 §3.2 reads them, over RFC 959.

§3.2.1 login (`login`), §3.2.2 one CWD per <cwd> segment then RETR or
NLST of <name>, §3.2.3 typecodes and the guess when there is none
(`operate`, `directory`), §3.2.5 reuse: control connections are pooled
under `login.pool_key` and, because every URL path is relative to the login
directory, a reused connection goes back to the directory PWD named after
login before the next URL's CWDs.  This module only takes a connection
from the pool (or logs in anew) and gives it back.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from fetcher.errors import ProtocolError, UsageError
from fetcher.handler import Resource, Session, trace
from fetcher.schemes.ftp.control import Control, StaleControl
from fetcher.schemes.ftp.hooks import Hooks
from fetcher.schemes.ftp.login import PoolKey, choose_login, connect, pool_key, take_pooled
from fetcher.schemes.ftp.operate import operate
from fetcher.url import URL, FtpURL

if TYPE_CHECKING:
    from fetcher.handler import LaneWork, SessionHost


class Handler(Hooks):
    scheme = "ftp"
    default_port = 21

    # -- the bulk lane (fetcher/bulk/lanes.py, lane.py): a kept control connection --------

    def lane_key(self, url: URL, client: SessionHost, *, resume: bool) -> Hashable | None:
        from fetcher.schemes.ftp import lane

        return lane.lane_key(url, client, resume=resume)

    async def run_lane(self, work: LaneWork) -> None:
        from fetcher.schemes.ftp import lane

        await lane.run_lane(work)

    async def open(self, url: URL, session: Session) -> Resource:
        if not isinstance(url, FtpURL):
            raise UsageError(f"the FTP handler cannot open {url.scheme}: URLs")
        implicit = url.scheme == "ftps"
        explicit = not implicit and session.settings.ftp_tls
        login = choose_login(url, session)
        key = pool_key(url, login.user, explicit_tls=explicit)
        pooled = await take_pooled(session, key)
        if pooled is not None:
            try:
                return await self._run(url, session, key, pooled)
            except StaleControl as error:
                trace.debug("* reused connection unusable (%s); reconnecting", error)
                await pooled.aclose()
        control = await connect(url, session, login, implicit=implicit, explicit=explicit)
        try:
            return await self._run(url, session, key, control)
        except StaleControl as error:
            raise ProtocolError(f"the FTP conversation with {url.host} broke: {error}") from None

    async def _run(self, url: FtpURL, session: Session, key: PoolKey, control: Control) -> Resource:
        async def release() -> None:
            if control.reusable:
                await session.pool.give(key, control)
            else:
                await control.aclose()

        try:
            resource = await operate(url, session, control, release)
        except StaleControl:
            raise
        except BaseException:
            await release()
            raise
        if resource.kind != "document":
            await release()
        return resource
