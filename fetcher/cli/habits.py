"""curl and wget habits: what their options are called here, and the spellings that would be misread.

fetch's short options follow curl.  wget's options are accepted by their
long names where the meaning is the same (--tries, --directory-prefix,
--no-verbose, --output-document, ...), never as short letters that mean
something else in curl.  A wget (or curl) spelling that fetch would read
differently, or not at all, is refused before anything runs, with a hint
naming fetch's option: `fetch -O out.txt URL` (wget's -O FILE) would
otherwise try to fetch "out.txt" as a URL, and `fetch -c URL` would die
with argparse's bare "unrecognized arguments".

The table `EQUIVALENTS` is the one the manual page (fetcher/cli/manpage.py) and
docs/options.md print.  Plain data and the standard library only: this
runs before every command, `fetch --version` included.
"""

from __future__ import annotations

import argparse
import re

#: (fetch, curl, wget) spellings of one meaning; "-" where a tool has none.
EQUIVALENTS: tuple[tuple[str, str, str], ...] = (
    ("-o FILE", "-o FILE", "-O FILE"),
    ("-O", "-O", "(default)"),
    ("-J", "-J", "--content-disposition"),
    ("--output-dir DIR", "--output-dir DIR", "-P DIR"),
    ("-d DIR (many URLs)", "-", "-P DIR"),
    ("-C", "-C -", "-c"),
    ("--no-clobber", "--no-clobber", "-nc"),
    ("--retries N", "--retry N", "-t N+1, --tries N+1"),
    ("-s", "-s", "-nv"),
    ("-s 2>/dev/null", "-s", "-q"),
    ("-S (default)", "-S", "(default)"),
    ("-f (default)", "-f", "(default)"),
    ("-L (default)", "-L", "(default)"),
    ("--no-location", "(default)", "--max-redirect 0"),
    ("-I", "-I", "--spider -S"),
    ("-D FILE", "-D FILE", "-S (on stderr)"),
    ("-x URL", "-x URL", "-e http_proxy=URL"),
    ("-A TEXT", "-A TEXT", "-U TEXT"),
    ("-H 'NAME: VALUE'", "-H 'NAME: VALUE'", "--header 'NAME: VALUE'"),
    ("-e URL", "-e URL", "--referer URL"),
    ("-k", "-k", "--no-check-certificate"),
    ("--timeout SECONDS", "-", "-T SECONDS"),
    ("--connect-timeout S", "--connect-timeout S", "--connect-timeout S"),
    ("-m SECONDS", "-m SECONDS", "-"),
    ("--limit-rate RATE", "--limit-rate RATE", "--limit-rate RATE"),
    ("-i FILE", "-", "-i FILE"),
    ("-r", "-", "-r"),
    ("--depth N", "-", "-l N"),
    ("(default)", "-", "-np"),
    ("-N (with -r)", "-", "-N"),
    ("--span-hosts", "-", "-H"),
    ("--no-robots", "-", "-e robots=off"),
    ("-r -N", "-", "-m"),
    ("-R", "-R", "(default)"),
    ("-w FORMAT", "-w FORMAT", "-"),
    ("-u USER[:PASSWORD]", "-u USER[:PASSWORD]", "--user, --password"),
    ("-K FILE", "-K FILE", "--config FILE"),
    ("-q", "-q", "--no-config"),
    ("-v", "-v", "-d"),
)

#: Accepted as curl or wget write them, though they change nothing: what fetch does anyway.
DEFAULTS_ACCEPTED = ("-L", "-f", "-S", "--no-parent", "-C -")

#: Spellings fetch refuses before running: (what the user probably meant, fetch's option).  Only
#: consulted for a token the parser does not know, so an option fetch adds later wins over this.
MISREAD: dict[str, tuple[str, str]] = {
    "-c": ("wget's -c (--continue)", "-C (--continue) resumes FILE.part of -o/-O"),
    "-P": ("wget's -P DIR (--directory-prefix)", "-d DIR (--directory-prefix DIR), or --output-dir DIR with -O"),
    "-nv": ("wget's -nv (--no-verbose)", "-s (--no-verbose) turns the progress bar off"),
    "-nc": ("wget's -nc (--no-clobber)", "--no-clobber keeps existing files"),
    "-np": ("wget's -np (--no-parent)", "leave it out: -r never goes above the start directory (--no-parent)"),
    "-nd": ("wget's -nd (--no-directories)", "leave it out: -d saves side by side (--layout flat) by default"),
    "-nH": ("wget's -nH (--no-host-directories)", "--layout flat (the default) saves without host directories"),
    "-t": ("wget's -t N (--tries)", "--tries N (N attempts in all) or --retries N-1"),
    "-T": ("wget's -T SECONDS (--timeout)", "--timeout SECONDS bounds each wait"),
    "-l": ("wget's -l N (--level)", "--depth N sets the levels of -r"),
    "-U": ("wget's -U TEXT (--user-agent)", "-A TEXT (--user-agent TEXT)"),
    "-X": ("curl's -X METHOD (--request)", "-I for a HEAD request; fetch sends GET otherwise"),
    "--request": ("curl's -X METHOD (--request)", "-I for a HEAD request; fetch sends GET otherwise"),
    "--quiet": (
        "wget's -q (--quiet)",
        "-s hides the progress bar; add 2>/dev/null to drop error messages too (-q here is curl's --no-config)",
    ),
    "--mirror": ("wget's -m (--mirror)", "-r -N mirrors (--depth N sets the levels)"),
    "--level": ("wget's -l N (--level; 0 is endless there)", "--depth N sets the levels of -r"),
    "--spider": ("wget's --spider", "-I: send HEAD and print the response head"),
    "--server-response": ("wget's -S (--server-response)", "-D - (or -D FILE) prints the response head"),
    "--password": ("wget's --password", "-u NAME[:PASSWORD] gives the login (a missing password is asked for)"),
    "--http-user": ("wget's --http-user NAME", "-u NAME[:PASSWORD] gives the login"),
    "--compressed": ("curl's --compressed", "leave it out: gzip is asked for and decoded by default"),
}


#: fetch flags (no value) that another tool's users give a value: (their meaning, fetch's way).
FLAG_GIVEN_A_VALUE: dict[str, tuple[str, str]] = {
    "-O": ("wget's -O FILE (--output-document)", "-o FILE (or --output-document FILE) names the file"),
    "-R": ("wget's -R LIST (--reject)", "fetch has no reject list; -R here is curl's --remote-time"),
    "-I": ("wget's -I LIST (--include-directories)", "fetch has no include list; -I here is curl's --head"),
    "-C": ("curl's -C OFFSET", "-C alone (curl's -C -) resumes where FILE.part ends"),
}

#: fetch options with a value that another tool's users give a URL: (their meaning, fetch's way).
GIVEN_A_URL: dict[str, tuple[str, str, str]] = {
    # option: (their meaning, fetch's way, which URLs: a regex on the following argument)
    "-m": ("wget's -m (--mirror)", "-r -N mirrors; -m here is curl's --max-time SECONDS", r"[A-Za-z][\w+.-]*:"),
    "-H": (
        "wget's -H (--span-hosts)",
        "--span-hosts; -H here is curl's --header 'NAME: VALUE'",
        r"[A-Za-z][\w+.-]*://",
    ),
    "-d": (
        "wget's -d (--debug)",
        "-v traces the protocol; -d here is the directory to save under",
        r"(?i)(https?|gophers?)://",
    ),
}


class Misread(Exception):
    """A spelling fetch would read differently from the tool it comes from (exit 2)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def _takes_value(parser: argparse.ArgumentParser, token: str) -> bool:
    """True when `token` is an option of `parser` whose value is the next argument."""
    actions = parser._option_string_actions
    if token.startswith("--"):
        action = actions.get(token)
        return action is not None and action.nargs != 0 and action.nargs != "?"
    for index in range(1, len(token)):  # -sSLO, -sA TEXT, -oFILE
        action = actions.get("-" + token[index])
        if action is None:
            return False
        if action.nargs != 0:
            return index == len(token) - 1 and action.nargs != "?"
    return False


def _all_flags(actions: dict[str, argparse.Action], letters: str) -> bool:
    """True when every letter is a fetch option that takes no value (-OJ, -OL: combined flags)."""
    return all(actions.get("-" + letter) is not None and actions["-" + letter].nargs == 0 for letter in letters)


def _looks_like_url(text: str) -> bool:
    return re.match(r"\s*(?:URL:)?<?[A-Za-z][A-Za-z0-9+.-]*:", text) is not None


def normalize(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """`argv` with curl's `-C -` taken as the -C it is here; Misread for a spelling fetch would misread."""
    out: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--":
            out += argv[index - 1 :]
            break
        following = argv[index] if index < len(argv) else None
        if token == "-C-" or (token == "-C" and following == "-"):
            out.append("-C")  # curl's `-C -`: resume where the file ends, which is what -C does
            index += token == "-C"
            continue
        _check(parser, token, following)
        out.append(token)
        if _takes_value(parser, token) and following is not None:
            out.append(following)
            index += 1
    return out


def _check(parser: argparse.ArgumentParser, token: str, following: str | None) -> None:
    """Raise Misread when `token` (before `following`) is another tool's spelling fetch would misread."""
    if not token.startswith("-") or token == "-":
        return
    actions = parser._option_string_actions
    if token.startswith("--"):
        name = token.split("=", 1)[0]
        if name == "--referer" and "=" not in token:
            _check_value(name, following)
        if name not in actions and name in MISREAD:
            meaning, instead = MISREAD[name]
            raise Misread(f"{token}: not a fetch option (it looks like {meaning})", instead)
        return
    if token not in actions and token in MISREAD:  # -nv, -nc, -np: wget's letter pairs
        meaning, instead = MISREAD[token]
        raise Misread(f"{token}: not a fetch option (it looks like {meaning})", instead)
    _check_letters(actions, token, following)


def _check_letters(actions: dict[str, argparse.Action], token: str, following: str | None) -> None:
    """`-x`, or short options run together as curl allows (-sSLO, -qO-, -oFILE), letter by letter."""
    letters = token[1:]
    for index, letter in enumerate(letters):
        option, rest = "-" + letter, letters[index + 1 :]
        action = actions.get(option)
        if action is None:
            if option in MISREAD:
                meaning, instead = MISREAD[option]
                what = "not a fetch option" if index == 0 else f"{option} is not a fetch option"
                raise Misread(f"{token}: {what} (it looks like {meaning})", instead)
            return  # argparse says what is wrong
        if action.nargs != 0:  # the rest of the token, or the next argument, is its value
            if not rest:
                _check_value(option, following)
            return
        if option not in FLAG_GIVEN_A_VALUE:
            continue
        meaning, instead = FLAG_GIVEN_A_VALUE[option]
        if option == "-O" and (rest == "-" or (not rest and following == "-")):
            stdout = "leave -O out: a document goes to stdout (-o - forces it onto a terminal)"
            raise Misread(f"{token}: -O takes no value here (curl's -O: save under the URL's name); wget's -O - "
                          "is stdout", stdout)  # fmt: skip
        if rest and not _all_flags(actions, rest):
            if option == "-O":
                instead = f"-o {rest} (or --output-document {rest}) names the file"
            raise Misread(f"{token}: {option} takes no value here (it looks like {meaning})", instead)
        if not rest and following is not None and following[:1] != "-" and not _looks_like_url(following):
            raise Misread(f"{option} takes no value here, so {following!r} would be read as a URL "
                          f"(it looks like {meaning})", instead)  # fmt: skip


def _check_value(option: str, value: str | None) -> None:
    """The value of a fetch option that is really a URL (wget's -m URL) or a wget -e command."""
    if value is None:
        return
    if option in GIVEN_A_URL:
        meaning, instead, pattern = GIVEN_A_URL[option]
        if re.match(pattern, value):
            raise Misread(f"{option} {value}: the URL would be read as the value of {option} "
                          f"(it looks like {meaning})", instead)  # fmt: skip
    if option in ("-e", "--referer") and re.fullmatch(r"\w+\s*=.*", value):
        robots = value.replace(" ", "").lower() in ("robots=off", "robots=0")
        raise Misread(f"-e is curl's --referer URL; {value!r} looks like a wget -e command",
                      "--no-robots" if robots else "give the option itself (fetch --help lists them), "
                      "on the command line or in ~/.fetchrc")  # fmt: skip
