"""One exception tree; each class carries its exit code (docs/errors.md lists them).

Messages say what failed and why; `hint` says what the user can do about it.
The CLI prints `fetch: <message>` and, on a second line, `hint: <hint>`.
"""

from __future__ import annotations


class FetchError(Exception):
    """Base of every error fetcher raises on purpose."""

    exit_code = 1
    #: True when trying again later may succeed (bulk retries these).
    transient = False
    #: The body of a server's error reply (HTTP 4xx/5xx), when there was one;
    #: the CLI prints it with --show-error-body.
    body: bytes | None = None
    #: The server's numeric reply that made this error (an HTTP status), when it gave one (-w %{http_code}).
    response_code: int | None = None

    def __init__(self, message: str, *, hint: str | None = None, url: str | None = None) -> None:
        # Passwords of URLs quoted in a message never reach the user's screen
        # or logs (the parser is loaded by the time anything fails).
        from fetcher.text import mask_secrets as redact

        message = redact(message)
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.url = url

    @property
    def url(self) -> str | None:
        """The URL that failed, as text, its password masked."""
        return self._url

    @url.setter
    def url(self, value: str | None) -> None:
        from fetcher.text import mask_secrets as redact

        self._url = redact(value) if value is not None else None

    def __str__(self) -> str:
        return self.message


class UsageError(FetchError):
    """The command line or the library call itself is wrong."""

    exit_code = 2


class URLError(UsageError):
    """A URL does not follow RFC 1738; `part` names the offending component."""

    def __init__(
        self,
        message: str,
        *,
        part: str | None = None,
        position: int | None = None,
        hint: str | None = None,
        url: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint, url=url)
        self.part = part
        self.position = position


class NoHandler(UsageError):
    """The URL parsed, but no handler is registered for its scheme."""


class UnsafeURL(FetchError):
    """The guard refused the URL before any connection was opened."""

    exit_code = 3

    def __init__(self, message: str, *, part: str, rule: str, hint: str | None = None, url: str | None = None) -> None:
        super().__init__(message, hint=hint, url=url)
        self.part = part
        self.rule = rule


class ConnectError(FetchError):
    """Name lookup or TCP connect failed."""

    exit_code = 4
    transient = True


class AuthError(FetchError):
    """Login or permission refused."""

    exit_code = 5


class NotFound(FetchError):
    """The server says the resource does not exist."""

    exit_code = 6


class ProtocolError(FetchError):
    """The server said something the client cannot accept."""

    exit_code = 7


class TransientError(ProtocolError):
    """A refusal that says "try again later" (FTP 4xx, HTTP 503, Gopher+ --2)."""

    transient = True

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        hint: str | None = None,
        url: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint, url=url)
        self.retry_after = retry_after


class TooLarge(ProtocolError):
    """The body went past the configured --max-size."""


class LimitExceeded(TooLarge):
    """A server sent more than a cap of `fetcher.settings.Limits` allows."""

    def __init__(self, what: str, limit: int, name: str, *, url: str | None = None) -> None:
        super().__init__(
            f"the server sent more than {limit} {what}",
            hint=f"raise the cap with --limit {name}=N (or Client(limits={{'{name}': N}})) if this is expected",
            url=url,
        )
        self.limit_name = name
        self.limit = limit


class Timeout(FetchError):
    """No progress within the configured time."""

    exit_code = 8
    transient = True


class OutputError(FetchError):
    """fetcher cannot write where it was asked: a full disk, no permission, a
    missing directory, or a symlink or special file in the way of a `.part`
    file (fetcher never writes through those)."""

    exit_code = 9


class Interrupted(FetchError):
    """The user pressed Ctrl-C."""

    exit_code = 130
