"""Option files: `--config FILE` and `~/.fetchrc`, read as curl reads `.curlrc`.

One option per line; blank lines and lines starting with `#` are skipped.
Each of these lines means the same:

    --user-agent probe/1
    --user-agent=probe/1
    user-agent = probe/1
    user-agent: "probe/1"
    -A probe/1

A value may be in double quotes (then `\\"`, `\\\\`, `\\t`, `\\n` are escapes and
`#` is kept); unquoted, it runs to the end of the line, spaces included.  A
flag stands alone (`silent`, `--no-progress`).  `url = URL` adds a URL.

Which files: `~/.fetchrc` (or the file `$FETCHRC` names) first, then each
`--config FILE` in order, then the command line, so the command line wins
for single-valued options and repeatable ones (-H) add up.  `-q/--no-config`
skips `~/.fetchrc`.  A missing ~/.fetchrc is fine; a missing --config FILE is
an error.  Every error names the file and the line.  A file over 1 MiB or
10,000 lines is refused (exit 2) after reading at most that much, so
`-K /dev/zero` or a $FETCHRC naming an endless file ends at once.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


class ConfigError(Exception):
    """A config file that cannot be read or holds a line fetch does not understand (exit 2)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


#: The most of one option file fetch reads, in bytes and in lines: `-K /dev/zero`, or $FETCHRC naming an
#: endless or huge file, is an error naming the file instead of a read until memory runs out.
MAX_BYTES = 1 << 20
MAX_LINES = 10_000

#: Options that choose config files: meaningless inside one.
_NOT_IN_FILES = frozenset({"--config", "--no-config", "--help", "--version", "--man", "--print-completion"})


def default_path() -> Path:
    """`$FETCHRC` when set, else ~/.fetchrc."""
    return Path(os.environ.get("FETCHRC") or os.path.expanduser("~/.fetchrc"))


def config_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The arguments the config files add, to go before the command line's."""
    paths: list[tuple[Path, bool]] = []
    if not getattr(args, "no_config", False):
        paths.append((default_path(), False))
    paths += [(Path(name), True) for name in getattr(args, "config", None) or []]
    arguments: list[str] = []
    for path, required in paths:
        arguments += read_config(parser, path, required=required)
    return arguments


def read_config(parser: argparse.ArgumentParser, path: Path, *, required: bool = True) -> list[str]:
    """Arguments from one file (`--name=value` tokens and URLs), each line checked against the parser.

    `required` is False for ~/.fetchrc, which may be absent (and -q skips).
    """
    try:
        with path.open("rb") as source:
            data = source.read(MAX_BYTES + 1)
    except FileNotFoundError:
        if not required:
            return []
        raise ConfigError(f"--config {path}: no such file", hint="check the path") from None
    except OSError as error:
        raise ConfigError(f"cannot read the config file {path}: {error.strerror or error}") from None
    skip = "" if required else f", or run fetch -q to skip {path}"
    lines = data.count(b"\n")
    if len(data) > MAX_BYTES or lines > MAX_LINES:
        over = "is over 1 MiB" if len(data) > MAX_BYTES else f"has over {MAX_LINES} lines"
        raise ConfigError(f"the option file {path} {over} (the cap for an option file)",
                          hint="an option file holds options, one a line (a list of URLs goes in -i FILE)"
                          + skip)  # fmt: skip
    arguments: list[str] = []
    hint = "fix or remove that line" + skip
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise ConfigError(f"{path} line {number}: not UTF-8 text", hint=hint) from None
        if not line or line.startswith("#"):
            continue
        try:
            arguments += _line_arguments(parser, line)
        except ValueError as error:
            raise ConfigError(f"{path} line {number}: {error}", hint=hint) from None
    return arguments


def _line_arguments(parser: argparse.ArgumentParser, line: str) -> list[str]:
    name, value = _split(line)
    if name == "url":
        if value is None:
            raise ValueError("'url' needs a value (url = URL)")
        return [value]
    option = name if name.startswith("-") else f"--{name}"
    action = _action(parser, option)
    if action is None:
        raise ValueError(f"unknown option {option!r}")
    if any(string in _NOT_IN_FILES for string in action.option_strings):
        raise ValueError(f"{option} cannot be used in a config file")
    long = max(action.option_strings, key=len)
    if action.nargs == 0:
        if value is not None:
            raise ValueError(f"{option} takes no value (found {value!r})")
        # --progress / --no-progress: keep the form the user wrote, both are the one action.
        return [option if option.startswith("--") else long]
    if value is None:
        raise ValueError(f"{option} needs a value")
    _check_value(action, option, value)
    return [f"{long}={value}"]


def _split(line: str) -> tuple[str, str | None]:
    """`name`, `name value`, `name = value`, `name: value`, `--name=value`: (name, value or None)."""
    end = 0
    while end < len(line) and not (line[end].isspace() or line[end] in "=:"):
        end += 1
    name, rest = line[:end], line[end:].lstrip()
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip()
    if not name:
        raise ValueError(f"expected an option name, found {line!r}")
    if not rest:
        return name, None
    return name, _unquote(rest) if rest.startswith('"') else rest


_ESCAPES = {"\\": "\\", '"': '"', "t": "\t", "n": "\n", "r": "\r"}


def _unquote(text: str) -> str:
    out: list[str] = []
    index = 1
    while index < len(text):
        char = text[index]
        if char == '"':
            trailing = text[index + 1 :].strip()
            if trailing and not trailing.startswith("#"):
                raise ValueError(f"text after the closing quote: {trailing!r}")
            return "".join(out)
        if char == "\\" and index + 1 < len(text):
            index += 1
            out.append(_ESCAPES.get(text[index], "\\" + text[index]))
        else:
            out.append(char)
        index += 1
    raise ValueError("a quoted value without its closing quote")


def _action(parser: argparse.ArgumentParser, option: str) -> argparse.Action | None:
    for action in parser._actions:
        if option in action.option_strings:
            return action
    return None


def _check_value(action: argparse.Action, option: str, value: str) -> None:
    """What argparse would say about this value, said here so the message can name the line."""
    if callable(action.type):
        try:
            action.type(value)
        except (argparse.ArgumentTypeError, TypeError, ValueError) as error:
            raise ValueError(f"{option}: {error}") from None
    if action.choices is not None and value not in action.choices:
        choices = ", ".join(map(str, action.choices))
        raise ValueError(f"{option}: {value!r} is not one of {choices}")
