"""Gopher+ ASK forms (gopher-plus.md §2.5): parse the +ASK block, collect answers, encode them.

The answers travel as the RFC 1738 §3.4.9 Gopher+ string
`+<view>\\t1\\r\\n+-1\\r\\n<a1>\\r\\n...\\r\\n.\\r\\n`, so a filled form is just
a URL: the guard checks it like any other and the user can replay it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fetcher.errors import UsageError
from fetcher.text import escape

#: Canonical spelling of each kind (matched case-insensitively).
KINDS = {k.lower(): k for k in ("Ask", "AskP", "AskL", "AskF", "Choose", "ChooseF", "Select", "Note")}


@dataclass
class AskField:
    kind: str
    prompt: str
    args: list[str] = field(default_factory=list)

    @property
    def answerable(self) -> bool:
        return self.kind != "Note"

    @property
    def default(self) -> str | None:
        if self.kind in ("Ask", "AskP", "AskF") and self.args:
            return self.args[0]
        if self.kind == "Select":
            tail = self.prompt.rsplit(":", 1)
            if len(tail) == 2 and tail[1].strip() in ("0", "1"):
                return tail[1].strip()
        return None

    @property
    def label(self) -> str:
        """The prompt as shown (a Select's ":0"/":1" default suffix removed)."""
        if self.kind == "Select" and self.default is not None:
            return self.prompt.rsplit(":", 1)[0]
        return self.prompt

    def describe(self) -> str:
        text = f"{self.kind}: {self.label}"
        if self.kind == "Choose" and self.args:
            text += " (" + " | ".join(self.args) + ")"
        elif self.default is not None:
            text += f" [{self.default}]"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "prompt": self.label, "args": self.args, "default": self.default}


def parse_ask_lines(lines: list[str]) -> list[AskField]:
    fields = []
    for line in lines:
        if not line.strip():
            continue
        kind, sep, rest = line.partition(":")
        canonical = KINDS.get(kind.strip().lower()) if sep else None
        if canonical is None:
            if sep and kind.strip() and " " not in kind.strip():
                fields.append(AskField(kind=kind.strip(), prompt=rest.strip()))
            else:
                fields.append(AskField(kind="Note", prompt=line.strip()))
            continue
        prompt, *args = rest.split("\t")
        fields.append(AskField(kind=canonical, prompt=prompt.strip(), args=args))
    return fields


def _key(text: str) -> str:
    return text.strip().rstrip("?:").strip().lower()


def match_given(fields: list[AskField], given: Mapping[str, str]) -> dict[int, str]:
    """Which answerable field (numbered from 1) each --form NAME=VALUE fills.

    NAME is the field's number, its prompt, or a word of the prompt that
    no other field shares; a NAME that fills nothing is an error, so a typo
    is never silently replaced by a default.
    """
    numbered = [item for item in fields if item.answerable]
    chosen: dict[int, str] = {}
    for name, value in given.items():
        kind, sep, rest = name.partition(":")
        key = _key(rest if sep and kind.strip().lower() in KINDS else name)
        if key.isascii() and key.isdigit() and 1 <= int(key) <= len(numbered):
            chosen[int(key)] = value
            continue
        exact = [n for n, item in enumerate(numbered, 1) if _key(item.label) == key]
        partial = [n for n, item in enumerate(numbered, 1) if key and key in item.label.lower()]
        found = exact or partial
        if len(found) != 1:
            what = "no field" if not found else "several fields"
            raise UsageError(
                f"--form {escape(name)}=... matches {what} of the form",
                hint="name a field by its number or its prompt (fetch the URL without --form to see them)",
            )
        chosen[found[0]] = value
    return chosen


def check_answer(item: AskField, value: str) -> list[str]:
    """The answer lines one field sends, or a UsageError saying what is wrong with the value."""
    if item.kind == "ChooseF":
        raise UsageError(
            f"the form asks to upload a file ({escape(item.label)}), which fetcher does not support",
            hint="use a Gopher+ client that can send files",
        )
    if item.kind not in KINDS.values():
        raise UsageError(f"the form has a field of unknown kind {escape(item.kind)!r}; fetcher cannot fill it")
    if item.kind == "AskL":
        lines = value.split("\n")
        answers = [str(len(lines)), *lines]
    elif item.kind == "Choose":
        answers = [_choice(item, value)]
    elif item.kind == "Select":
        answers = [_checkbox(item, value)]
    else:
        answers = [value]
    for line in answers:
        if line == "." or any(char in line for char in "\r\n\x00"):
            raise UsageError(
                f"the answer to {escape(item.label)!r} cannot be sent: a lone '.' or a line break would end the form",
                hint="give another answer",
            )
    return answers


def _choice(item: AskField, value: str) -> str:
    for choice in item.args:
        if choice.strip().lower() == value.strip().lower():
            return choice
    if value.strip().isascii() and value.strip().isdigit() and 1 <= int(value) <= len(item.args):
        return item.args[int(value) - 1]
    raise UsageError(
        f"{escape(value)!r} is not one of the choices for {escape(item.label)!r}: {escape(', '.join(item.args))}",
        hint="give one of the choices (or its number)",
    )


def _checkbox(item: AskField, value: str) -> str:
    word = value.strip().lower()
    if word in ("1", "yes", "y", "true", "on", "x"):
        return "1"
    if word in ("0", "no", "n", "false", "off", ""):
        return "0"
    raise UsageError(f"{escape(item.label)!r} is a checkbox: answer 1 or 0, not {escape(value)!r}")


def form_plus(answers: list[str], view: str = "+") -> str:
    """The §3.4.9 Gopher+ string that submits `answers` (lines already checked)."""
    return f"{view}\t1\r\n+-1\r\n" + "".join(line + "\r\n" for line in answers) + ".\r\n"


def form_advisory_text(fields: list[AskField]) -> str:
    lines = ["This item is a Gopher+ form; fill it with --form NAME=VALUE (NAME = field number or prompt):"]
    number = 0
    for item in fields:
        if item.answerable:
            number += 1
            lines.append(f"  {number}. {item.describe()}")
        else:
            lines.append(f"     {item.prompt}")
    return "\n".join(lines)
