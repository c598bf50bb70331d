"""--help, --help SCHEME, the man page and the completion scripts, checked against the parser itself.

Every option of `fetcher.cli.options.build_parser()` must have help text, state
its default in `fetch --help` (options that take no value are "off unless
given", as the description says, unless their default is on), and appear in
the man page and in the bash, zsh and fish completion scripts.  The checks
are functions of a parser, so the test also shows that they catch an option
added without help or default.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fetcher.cli.habits import EQUIVALENTS
from fetcher.cli.manpage import render as render_man
from fetcher.cli.optionref import render as render_reference
from fetcher.cli.options import build_parser
from fetcher.cli.topics import COMMON, TOPICS, Topic, topic_text
from fetcher.registry import HANDLERS
from tests.conftest import run_fetch
from tests.test_startup import heavy_in, imported, run_logged


def options_of(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [action for action in parser._actions if action.option_strings]


def off_unless_given(action: argparse.Action) -> bool:
    """A flag that is off by default, or --help/--version (whose default is 'not asked')."""
    return action.default is False or action.default == argparse.SUPPRESS


def help_blocks(text: str) -> dict[str, str]:
    """`fetch --help` output -> {option string: its entry's text (joined lines)}."""
    blocks: dict[str, str] = {}
    current: list[str] = []
    names: list[str] = []
    for line in [*text.splitlines(), ""]:
        if re.match(r"  -", line) or not line.startswith("    "):
            for name in names:
                blocks[name] = " ".join(" ".join(current).split())
            current, names = [], []
            if re.match(r"  -", line):
                names = re.findall(r"(?:^|, )(-{1,2}[\w-]+)", line.strip())
                names += re.findall(r"\[(--[\w-]+)\]", line)  # --progress | --no-progress
                names += [f"--no-{name[2:]}" for name in names if "--[no-]" in line]
                current = [line]
        else:
            current.append(line)
    return blocks


def help_problems(parser: argparse.ArgumentParser, text: str) -> list[str]:
    blocks = help_blocks(text)
    problems = []
    for action in options_of(parser):
        if not action.help or action.help == argparse.SUPPRESS:
            problems.append(f"{action.option_strings}: no help text")
            continue
        for option in action.option_strings:
            if option not in blocks:
                problems.append(f"{option}: not in --help")
        block = blocks.get(action.option_strings[-1], "")
        if not off_unless_given(action) and "default" not in block:
            problems.append(f"{action.option_strings}: --help does not state its default ({action.default!r})")
    return problems


def man_problems(parser: argparse.ArgumentParser, page: str) -> list[str]:
    return [
        f"{option}: not in the man page"
        for action in options_of(parser)
        for option in action.option_strings
        if f"\\fB{option.replace('-', chr(92) + '-')}\\fR" not in page
    ]


def reference_problems(parser: argparse.ArgumentParser, page: str) -> list[str]:
    """Each option string as docs/options.md writes it: in backquotes, alone or before its value."""
    return [
        f"{option}: not in docs/options.md"
        for action in options_of(parser)
        for option in action.option_strings
        if not re.search(rf"`{re.escape(option)}[` ]", page)
    ]


def completion_problems(parser: argparse.ArgumentParser, shell: str, script: str) -> list[str]:
    problems = []
    for action in options_of(parser):
        for option in action.option_strings:
            fish = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
            form = fish if shell == "fish" else option
            if not re.search(rf"(?<![\w-]){re.escape(form)}(?![\w-])", script):
                problems.append(f"{option}: not in the {shell} completion")
    return problems


# -- the parser as it is ------------------------------------------------------------------------------------


def test_every_option_has_help_and_its_default_in_help() -> None:
    result = run_fetch("--help")
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    parser = build_parser()
    assert len(options_of(parser)) > 60
    assert help_problems(parser, text) == []
    assert "Options that take no value are off unless given." in " ".join(text.split())


def test_help_is_grouped_by_purpose_and_ends_with_examples_and_exit_codes() -> None:
    text = run_fetch("--help").stdout.decode()
    assert text.startswith("usage: fetch [options] URL...\n       fetch [options] -i FILE -d DIR\n"
                           "       fetch --help [SCHEME]\n\nRetrieve RFC 1738 URLs")  # fmt: skip
    headings = re.findall(r"^(\S[^:\n]*):$", text, flags=re.MULTILINE)
    assert headings[:6] == ["positional arguments", "help", "output", "HTTP requests", "time limits and retries",
                            "safety and TLS"]  # fmt: skip
    assert {"login", "many URLs", "mirroring (-r)", "examples", "exit codes"} <= set(headings)
    examples = text[text.index("\nexamples:\n") :]
    assert "  fetch -O https://example.org/big.iso" in examples
    assert "  fetch --help gopher" in examples
    assert "  141  stdout closed by its reader" in examples


def test_man_page_names_every_option_and_every_scheme() -> None:
    parser = build_parser()
    page = render_man(parser)
    assert page.startswith(".TH FETCH 1 ")
    assert man_problems(parser, page) == []
    for topic in TOPICS:
        assert f".SS {', '.join(topic.schemes)}: " in page
    for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "URL SCHEMES", "EXAMPLES", "EXIT STATUS", "ENVIRONMENT"):
        assert f"\n.SH {heading}\n" in page
    requests = re.compile(r"\.(TH|SH|SS|TP|PP|B|nf|fi|br)\b")
    assert [line for line in page.splitlines() if line.startswith(".") and not requests.match(line)] == []


def test_fetch_man_prints_a_page_that_man_renders_without_warnings(tmp_path: Path) -> None:
    result = run_fetch("--man")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(b".TH FETCH 1 ")
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed")
    page = tmp_path / "fetch.1"
    page.write_bytes(result.stdout)
    rendered = subprocess.run([groff, "-man", "-Tutf8", "-ww", str(page)], capture_output=True, timeout=60)
    assert rendered.returncode == 0 and rendered.stderr == b"", rendered.stderr.decode()
    plain = re.sub(r".\x08", "", rendered.stdout.decode())
    assert "--print-completion SHELL" in plain.replace("‐", "-")
    assert "ftp://<user>:<password>@<host>:<port>/<cwd1>/<cwd2>/.../<cwdN>/<name>;type=<typecode>" in plain


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_names_every_option(shell: str) -> None:
    if shell != "fish":
        pytest.importorskip("shtab", reason="bash and zsh completion need shtab (the completion extra)")
    result = run_fetch("--print-completion", shell)
    assert result.returncode == 0, result.stderr
    script = result.stdout.decode()
    assert completion_problems(build_parser(), shell, script) == []
    checker = shutil.which(shell)
    if checker is not None:  # the script parses in its own shell
        assert subprocess.run([checker, "-n"], input=result.stdout, capture_output=True).returncode == 0


def test_fish_completion_offers_choices_topics_files_and_directories() -> None:
    script = run_fetch("--print-completion", "fish").stdout.decode()
    assert "complete -c fetch -l layout -x -a 'flat tree' -d " in script
    assert "complete -c fetch -s h -l help -x -a 'schemes ftp ftps http https gopher gophers news" in script
    assert "complete -c fetch -s o -l output -l output-document -r -F -d " in script
    assert "complete -c fetch -s i -l input-file -r -F -d " in script
    assert "complete -c fetch -s d -l directory -l directory-prefix -x -a '(__fish_complete_directories)' -d " in script
    assert "complete -c fetch -l timeout -x -d " in script  # a number: no file names offered


def bash_complete(script: Path, *words: str) -> list[str]:
    """What bash offers for `words` (the last one being completed), from the generated script."""
    line = " ".join(words)
    program = (f'source {shlex.quote(str(script))}; COMP_WORDS=({" ".join(shlex.quote(w) for w in words)}); '
               f"COMP_CWORD={len(words) - 1}; COMP_LINE={shlex.quote(line)}; COMP_POINT=${{#COMP_LINE}}; "
               '_shtab_fetch; printf "%s\\n" "${COMPREPLY[@]}"')  # fmt: skip
    result = subprocess.run(["bash", "-c", program], capture_output=True, timeout=60, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_bash_completion_completes_options_choices_and_help_topics(tmp_path: Path) -> None:
    pytest.importorskip("shtab", reason="bash completion needs shtab (the completion extra)")
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    script = tmp_path / "fetch.bash"
    script.write_bytes(run_fetch("--print-completion", "bash").stdout)
    assert bash_complete(script, "fetch", "--lay") == ["--layout"]
    assert bash_complete(script, "fetch", "--layout", "") == ["flat", "tree"]
    assert bash_complete(script, "fetch", "--help", "go") == ["gopher", "gophers"]
    assert "--print-completion" in bash_complete(script, "fetch", "--pr")
    assert "_shtab_fetch__i_COMPGEN=_shtab_compgen_files" in script.read_text()
    assert "_shtab_fetch__d_COMPGEN=_shtab_compgen_dirs" in script.read_text()


# -- the checks catch an option added carelessly --------------------------------------------------------------


def test_an_option_without_help_or_default_fails_the_checks() -> None:
    parser = build_parser()
    parser.add_argument("--frobnicate", metavar="N", type=int, default=3, help="how much to frobnicate")
    parser.add_argument("--quietly")
    text = parser.format_help()
    problems = help_problems(parser, text)
    assert "['--frobnicate']: --help does not state its default (3)" in problems
    assert "['--quietly']: no help text" in problems
    missing = build_parser()
    assert man_problems(parser, render_man(missing)) == ["--frobnicate: not in the man page",
                                                          "--quietly: not in the man page"]  # fmt: skip
    assert reference_problems(parser, DOCS_OPTIONS.read_text()) == ["--frobnicate: not in docs/options.md",
                                                                    "--quietly: not in docs/options.md"]  # fmt: skip
    fish = run_fetch("--print-completion", "fish").stdout.decode()
    assert completion_problems(parser, "fish", fish) == ["--frobnicate: not in the fish completion",
                                                         "--quietly: not in the fish completion"]  # fmt: skip


# -- every option in --help, the man page and the docs site (issue 29) -------------------------------------------

DOCS_OPTIONS = Path(__file__).resolve().parent.parent / "docs" / "options.md"


def test_every_option_is_in_help_the_man_page_and_the_docs_option_reference() -> None:
    parser = build_parser()
    options = [option for action in options_of(parser) for option in action.option_strings]
    assert {"--retry", "-I", "--head", "-D", "-f", "-S", "-x", "--tries", "--directory-prefix"} <= set(options)
    help_text = run_fetch("--help").stdout.decode()
    man = run_fetch("--man").stdout.decode()
    page = DOCS_OPTIONS.read_text()
    assert help_problems(parser, help_text) == []
    assert man_problems(parser, man) == []
    assert reference_problems(parser, page) == []


def test_the_docs_option_reference_is_what_the_parser_prints() -> None:
    """docs/options.md is generated (python -m fetcher.cli.optionref > docs/options.md): never behind the parser."""
    regenerate = "regenerate: python -m fetcher.cli.optionref > docs/options.md"
    assert DOCS_OPTIONS.read_text() == render_reference(), regenerate
    assert "  - Option reference: options.md\n" in (DOCS_OPTIONS.parent.parent / "mkdocs.yml").read_text()


def test_the_docs_name_the_option_files_and_what_the_issue_found_missing() -> None:
    page = DOCS_OPTIONS.read_text()
    for needed in ("`-J`", "`~/.fetchrc`", "`FETCHRC`", "`--speed-limit BYTES`", "`--output-dir DIR`"):
        assert needed in page, needed
    assert "## curl and wget\n" in page and "| fetch | curl | wget |\n|---|---|---|\n| `-o FILE` |" in page


def test_man_page_titles_name_options_as_typed_and_list_the_option_files() -> None:
    page = render_man()
    assert "\n.SS MIRRORING (\\-r)\n" in page and "(\\-R)" not in "".join(re.findall(r"\.SS .*", page))
    assert "\n.SS OPTION FILES (one option a line: 'name = value', '\\-\\-name value', # comments)\n" in page
    files = page[page.index("\n.SH FILES\n") : page.index("\n.SH SEE ALSO\n")]
    assert "\\fI~/.fetchrc\\fR" in files and "\\fI~/.netrc\\fR" in files
    environment = page[page.index("\n.SH ENVIRONMENT\n") : page.index("\n.SH FILES\n")]
    assert "\\fBFETCHRC\\fR" in environment


def test_man_page_maps_curl_and_wget_options_to_fetchs() -> None:
    result = run_fetch("--man")
    page = result.stdout.decode()
    table = page[page.index("\n.SH CURL AND WGET\n") : page.index("\n.SH EXAMPLES\n")]
    rows = table[table.index(".nf\n") + 4 : table.index("\n.fi\n")].splitlines()
    assert rows[0].split() == ["fetch", "curl", "wget"]
    assert len(rows) == len(EQUIVALENTS) + 1
    assert "\\-o FILE" in rows[1] and rows[1].rstrip().endswith("\\-O FILE")  # wget's -O FILE is fetch's -o FILE
    assert any(row.startswith("\\-\\-retries N") and "\\-\\-retry N" in row for row in rows)
    assert "wget's -O FILE" not in table and "\\-O FILE" in table


def test_help_says_the_manifest_is_appended_to() -> None:
    text = " ".join(run_fetch("--help").stdout.decode().split())
    assert "--manifest FILE append one JSON record per URL to FILE; an existing FILE is added to, not replaced" in text


# -- fetch --help SCHEME ------------------------------------------------------------------------------------


def test_every_scheme_of_the_registry_has_a_help_page() -> None:
    covered = {scheme for topic in TOPICS for scheme in topic.schemes}
    assert covered == set(HANDLERS)


def test_scheme_pages_name_only_real_options() -> None:
    known = {option for action in options_of(build_parser()) for option in action.option_strings}
    for topic in TOPICS:
        assert set(topic.options) <= known, topic.schemes
        for example in topic.examples:
            assert "fetch " in example
    assert set(COMMON) <= known


@pytest.mark.parametrize("topic", TOPICS, ids=lambda topic: topic.schemes[0])
def test_fetch_help_scheme_shows_the_url_form_options_and_examples(topic: Topic) -> None:
    for name in topic.schemes:
        result = run_fetch("--help", name)
        assert result.returncode == 0, result.stderr
        text = result.stdout.decode()
        assert text.startswith(f"fetch --help {topic.schemes[0]}: {topic.title}\n")
        for form in topic.forms:
            assert f"\n  {form}\n" in text
        assert "\nOptions for these URLs" in text and " ".join(topic.options) in " ".join(text.split())
        assert "\nExamples:\n  " in text


def test_help_accepts_a_url_and_lists_topics_and_refuses_unknown_ones() -> None:
    assert run_fetch("--help", "ftp://ftp.example.org/pub/").stdout.decode() == topic_text("ftp")
    listing = run_fetch("--help", "schemes").stdout.decode()
    for topic in TOPICS:
        assert f"  {', '.join(topic.schemes)} " in listing
    bad = run_fetch("--help", "gopherz")
    assert bad.returncode == 2 and bad.stdout == b""
    assert bad.stderr.decode().startswith("fetch: no help topic 'gopherz': topics are ftp, ftps, http")


@pytest.mark.parametrize("args", [("--help",), ("--help", "ftp"), ("--help", "wais"), ("--man",)])
def test_help_and_man_import_no_protocol(args: tuple[str, ...]) -> None:
    result = run_logged(*args)
    assert result.returncode == 0, result.stderr[-500:]
    names = imported(result.stderr)
    assert "fetcher.cli.options" in names
    assert heavy_in(names) == []
    assert not [name for name in names if name.startswith(("fetcher.schemes", "schemes", "trio"))]


@pytest.mark.parametrize("args", [("--help",), ("--help", "nntp"), ("--man",), ("--print-completion", "fish")])
def test_help_into_a_closed_pipe_is_quiet(args: tuple[str, ...]) -> None:
    # The reader is gone before fetch writes (as `fetch --help | true`): the write fails at once.
    reader, writer = os.pipe()
    os.close(reader)
    try:
        result = subprocess.run([sys.executable, "-m", "fetcher", *args], stdout=writer, stderr=subprocess.PIPE,
                                timeout=60)  # fmt: skip
    finally:
        os.close(writer)
    assert result.returncode == 141
    assert result.stderr == b""
