"""The FTP bulk lane: one logged-in control connection serves a host's URLs one after another.

FTP cannot pipeline retrievals (each RETR needs its own data connection),
so this lane (fetcher/bulk/lanes.py) saves what surrounds the protocol instead:
a bulk run's task per URL, its Session, deadlines, Resource plumbing and
the threaded writer of `save`.  Each URL runs through the task path's own
`operate` (CWD per segment, TYPE, the typecode guess, RETR, the length and
final-reply checks of `RetrBody`), on a control connection the worker keeps
between URLs, and its body goes to a `BodyWriter`.  A listing (a name that
turned out to be a directory) comes back as the task path returns it.

`lane_key` admits plain `ftp:` retrievals of a named file (no typecode or
`;type=i`) without credentials of their own (-u, userinfo), TLS, resume,
archive tap, trace, --max-time, --max-filesize or --limit-rate; the login
is then the same for every URL of the host (netrc or anonymous).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from fetcher.errors import FetchError, ProtocolError
from fetcher.handler import Session, admits, current_budget, deliver
from fetcher.schemes.ftp.control import Control, StaleControl
from fetcher.schemes.ftp.login import PoolKey, choose_login, connect, pool_key, take_pooled
from fetcher.schemes.ftp.operate import operate
from fetcher.url import URL, FtpURL

if TYPE_CHECKING:
    from fetcher.handler import LaneItem, LaneWork, Resource
    from fetcher.handler import SessionHost as Client

#: URLs taken from the queue at once (the worker runs them one by one).
BATCH = 16


def lane_key(url: URL, client: Client, *, resume: bool) -> Hashable | None:
    """The pool key of the connection `url` would log in on, when `url` may take the lane; else None.

    The login is the same for every URL admitted (netrc or anonymous), so
    a lane is one control connection's worth of URLs.
    """
    if (
        not isinstance(url, FtpURL)
        or url.scheme != "ftp"
        or url.typecode not in (None, "i")
        or not url.name
        or client.settings.ftp_tls
        or not admits(url, client, resume=resume, own_exchange=True)
    ):
        return None
    found = client.netrc_credentials(url.host)
    return pool_key(url, found[0] if found is not None else "anonymous", explicit_tls=False)


async def run_lane(work: LaneWork) -> None:
    """Retrieve the lane's URLs one after another, then give the kept control connection back."""
    lane = _Lane(work)
    try:
        while items := (work.take(BATCH) or await work.wait(BATCH)):
            for item in items:
                await lane.retrieve(item)
    finally:
        await lane.close()


class _Lane:
    """One worker: the control connection it keeps between URLs, and the key it was pooled under."""

    def __init__(self, work: LaneWork) -> None:
        self.work = work
        self.pool = work.client.pool
        self.control: Control | None = None
        self.key: PoolKey | None = None

    async def _control(self, url: FtpURL, session: Session) -> Control:
        if self.control is not None and self.control.reusable:
            return self.control
        await self._drop()
        login = choose_login(url, session)
        self.key = pool_key(url, login.user, explicit_tls=False)
        control = await take_pooled(session, self.key)
        if control is None:
            control = await connect(url, session, login, implicit=False, explicit=False)
        self.control = control
        return control

    async def retrieve(self, item: LaneItem) -> None:
        url = item.url
        assert isinstance(url, FtpURL)
        work = self.work
        client = work.client
        session = Session(client, url)
        current_budget.set(client.budget(url))
        for attempt in (1, 2):
            try:
                control = await self._control(url, session)
                resource = await operate(url, session, control, _keep)
                break
            except StaleControl as error:
                # A pooled control connection the server had closed: once more on a new one.
                await self._drop()
                if attempt == 2:
                    await work.failed(item, ProtocolError(f"the FTP conversation with {url.host} broke: {error}"))
                    return
            except FetchError as error:
                await self.close()  # kept in the pool if it can go on: a retry on the task path takes it
                await work.failed(item, error)
                return
            except BaseException:
                await self._drop()
                raise
        await self._deliver(item, resource)

    async def _deliver(self, item: LaneItem, resource: Resource) -> None:
        try:
            await deliver(self.work, item, resource, settle=self.close)
        except BaseException:
            await self._drop()
            raise
        await self._drop_if_unusable()  # a body not read to its end leaves the conversation mid-transfer

    async def _drop_if_unusable(self) -> None:
        if self.control is not None and not self.control.reusable:
            await self._drop()

    async def _drop(self) -> None:
        control, self.control = self.control, None
        if control is not None:
            await control.aclose()

    async def close(self) -> None:
        """The control connection goes back to the pool when it can carry another URL."""
        control, self.control = self.control, None
        if control is None:
            return
        if control.reusable and self.key is not None:
            await self.pool.give(self.key, control)
        else:
            await control.aclose()


async def _keep() -> None:
    """The handler's release: the lane keeps the control connection for its next URL."""
