"""`-w/--write-out FORMAT`: one line of facts on stdout after each URL, as curl's -w, in every mode.

One URL of the command line, each URL of a bulk run (`-i`, `-d`) and each
URL a mirror (`-r`) considers gets its line, once its outcome is known (a
bulk run's lines come in the order URLs finish, one for each record of its
manifest: retrieved, failed or skipped).  `FIELDS` says what each
`%{name}` gives and what it is where it does not apply (curl's empty or 0
value); `\\n`, `\\t`, `\\r`, `\\\\` and `%%` are as in curl.  An unknown
`%{name}` is a usage error when the options are read (exit 2, naming the
known ones), not a surprise after the download.

Text from servers (a content type, an error message) has its control
characters escaped, and no URL shows its password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: Every field, what it gives, and its value where it does not apply.
FIELDS: dict[str, str] = {
    "url": "the URL as given",
    "url_effective": "the URL last retrieved, after redirects (see num_redirects); else the URL as given",
    "http_code": "the HTTP status of the last reply, error replies too; 0 for other schemes and when no reply came "
    "(curl gives FTP's last reply code here)",
    "response_code": "the same as http_code",
    "content_type": "the type the server or handler gave (HTTP Content-Type, a Gopher item's type...); empty if none",
    "size_download": "bytes of the document received by this run (a page read for --links too); 0 for listings, "
    "advisories, and failures before the body",
    "size": "the same as size_download",
    "speed_download": "size_download / time_total, in bytes per second (a whole number); 0 when nothing came",
    "time_total": "seconds the URL took, retries included (6 decimals)",
    "num_redirects": "redirects followed (HTTP; a Prospero resolution or a Gopher `URL:` link counts as one); else 0",
    "remote_ip": "the IP address the URL's last connection reached (through a proxy: the proxy's); empty when none "
    "was made (file:, a skipped URL) and in --cluster runs",
    "remote_port": "the port of that connection; 0 when remote_ip is empty",
    "filename_effective": "the file written (-o, -O, -d); empty when the document went to stdout or nothing was saved",
    "errormsg": "the error message; empty on success",
    "exit_code": "the URL's exit code: 0 when retrieved (or skipped), else the error's (docs/errors.md)",
    "json": "every field above as one JSON object",
}

#: Fields that need the address each connection reached (kept only when asked: `Client.peers`).
REMOTE_FIELDS = frozenset({"remote_ip", "remote_port", "json"})

_TOKEN = re.compile(r"%\{([^}]*)\}|%%|\\[ntr\\]")
_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\\\": "\\", "%%": "%"}


def check(template: str) -> str:
    """The template itself if every `%{name}` is known; else ValueError naming it and the known ones."""
    for match in _TOKEN.finditer(template):
        name = match.group(1)
        if name is not None and name not in FIELDS:
            raise ValueError(f"unknown -w field %{{{name}}} (known: {', '.join(FIELDS)})")
    return template


def needs_peers(template: str) -> bool:
    """True when the template shows where connections went (the client must keep that: `Client.peers`)."""
    return any(match.group(1) in REMOTE_FIELDS for match in _TOKEN.finditer(template))


@dataclass
class Facts:
    """What one URL's line says (see FIELDS)."""

    url: str
    exit_code: int = 0
    seconds: float = 0.0
    size: int = 0
    effective: str | None = None
    code: int = 0
    content_type: str | None = None
    redirects: int = 0
    remote: tuple[str, int] | None = None
    filename: str | None = None
    error: str | None = None


def facts(
    url: str,
    *,
    result: Any = None,
    error: Any = None,
    seconds: float = 0.0,
    size: int = 0,
    filename: str | None = None,
    exit_code: int | None = None,
    peers: dict[tuple[str, int], tuple[str, int]] | None = None,
) -> Facts:
    """The facts of one URL from what its retrieval gave: `result` (a Resource, Fetched or Download:
    its url, content_type and metadata) and/or `error` (a FetchError)."""
    found = Facts(url, seconds=seconds, size=size, filename=filename or None)
    where = None
    if result is not None:
        where = result.url
        found.effective = str(result.url)
        found.content_type = result.content_type
        metadata = result.metadata or {}
        status, redirects = metadata.get("status"), metadata.get("redirects")
        found.code = status if isinstance(status, int) else 0
        found.redirects = redirects if isinstance(redirects, int) else 0
    if error is not None:
        found.error = error.message
        found.code = error.response_code or found.code
        found.effective = error.url or found.effective
    found.exit_code = exit_code if exit_code is not None else (error.exit_code if error is not None else 0)
    if peers:
        if where is None:
            from fetcher.url import parse_url

            try:
                where = parse_url(found.effective or url)
            except Exception:  # a line that is not a URL: no connection to tell of
                where = None
        key = (getattr(where, "host", None), getattr(where, "port", None))
        found.remote = peers.get(key)  # type: ignore[arg-type]
    return found


def values(found: Facts) -> dict[str, Any]:
    """Field -> value (str, int or float), passwords masked; server text as it came (escaped when printed)."""
    from fetcher.url import redact

    speed = int(found.size / found.seconds) if found.seconds > 0 else 0
    ip, port = found.remote if found.remote is not None else ("", 0)
    return {
        "url": redact(found.url),
        "url_effective": redact(found.effective or found.url),
        "http_code": found.code,
        "response_code": found.code,
        "content_type": found.content_type or "",
        "size_download": found.size,
        "size": found.size,
        "speed_download": speed,
        "time_total": round(found.seconds, 6),
        "num_redirects": found.redirects,
        "remote_ip": ip,
        "remote_port": port,
        "filename_effective": found.filename or "",
        "errormsg": redact(found.error or ""),
        "exit_code": found.exit_code,
    }


def render(template: str, found: Facts) -> str:
    """The template with its fields filled in (control characters of text fields escaped)."""
    from fetcher.text import safe_text

    table = values(found)

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return _ESCAPES[match.group(0)]
        if name == "json":
            import json

            return json.dumps(table, ensure_ascii=True)
        value = table[name]
        if name == "time_total":
            return f"{value:.6f}"
        return safe_text(value) if isinstance(value, str) else str(value)

    return _TOKEN.sub(fill, template)


def from_record(
    record: dict[str, Any], outcome: Any, peers: dict[tuple[str, int], tuple[str, int]] | None
) -> Facts:
    """A bulk run's URL: its manifest record, and its outcome (`Outcome`) when it was retrieved or failed."""
    result = outcome.result if outcome is not None else None
    error = outcome.error if outcome is not None else None
    found = facts(record["url"], result=result, error=error, seconds=float(record.get("seconds") or 0.0),
                  size=int(record.get("bytes") or 0), filename=record.get("path"), exit_code=record.get("exit_code"),
                  peers=peers)  # fmt: skip
    if error is None and record.get("error"):  # failed before it was retrieved (a bad line, a full disk)
        found.error = str(record["error"])
    return found
