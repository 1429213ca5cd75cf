"""README code blocks that a test runs, found by the markers in the README's source.

A block runs only when an HTML comment (invisible on GitHub) stands on the line right
above its fence, so a block added to the README later is not run until its author
marks it:

    <!-- doc-test: NAME -->                 run the ```sh, ```bash or ```python block
    <!-- doc-test: NAME after OTHER -->     first run OTHER (and what OTHER is after)
    <!-- doc-test: NAME exit 1 -->          the exit status it must end with (default 0)
    <!-- doc-test: NAME pytest -->          a Python block of test functions: run by pytest
    <!-- doc-test: NAME output -->          the ```text block is what NAME prints
    <!-- doc-test: NAME output stdout -->   ... on stdout (stderr is not shown)

Options combine (`NAME after demo exit 1`). An output block is compared line by line
with what the block printed (stdout and stderr together, as a terminal shows them): a
line that is only `...` stands for any number of lines, `...` inside a line for any
text, and `...` ending a line for the rest of it and any lines that follow. Before
comparing, the scratch paths are written the way the README writes them: the copy of
the repository as `/home/you/agent-assembler`, the scratch folder that stands for
`/tmp/demo` as `/tmp/demo`, the home folder as `~`; and a session id (different in
every run) matches any session id.

`/tmp/demo` holds, before any block runs, the copy of `agents/` and `examples/` that
the README's "Run" section makes, so a block that only needs that copy needs no
`after`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

MARKER = re.compile(r"<!--\s*doc-test:\s*(?P<spec>.*?)\s*-->")
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")
RUNNABLE = ("sh", "bash", "python")
README_CHECKOUT = "/home/you/agent-assembler"
README_DEMO = "/tmp/demo"
SESSION_ID = re.compile(r"\b\d{8}T\d{6}Z-[0-9a-f]{6}\b")
ANY_LINES = r"(?:[^\n]*\n)*?"


class MarkerError(ValueError):
    """A marker the test cannot follow: the message says which line and why."""


@dataclass(frozen=True)
class Block:
    """One marked block: what to run (or, for an output block, what it must print)."""

    name: str
    line: int
    language: str
    code: str
    after: str = ""
    exit: int = 0
    pytest: bool = False
    stdout: bool = False


@dataclass(frozen=True)
class Marked:
    runs: dict[str, Block]
    outputs: dict[str, Block]

    def chain(self, name: str) -> list[Block]:
        """`name`'s block, after every block it needs first (oldest first)."""
        blocks: list[Block] = []
        seen: set[str] = set()
        while name:
            if name in seen:
                raise MarkerError(f"`{name}` is after itself")
            seen.add(name)
            if name not in self.runs:
                raise MarkerError(f"no block is marked `doc-test: {name}`")
            blocks.insert(0, self.runs[name])
            name = self.runs[name].after
        return blocks


def marked_blocks(text: str) -> Marked:
    """Every marked block of a Markdown text; `MarkerError` for a marker that is not
    followed by a fence of the kind it needs, or a name used twice."""
    lines = text.splitlines()
    runs: dict[str, Block] = {}
    outputs: dict[str, Block] = {}
    for index, line in enumerate(lines):
        found = MARKER.search(line)
        if found is None:
            continue
        where = f"README.md:{index + 1}"
        words = found.group("spec").split()
        if not words:
            raise MarkerError(f"{where}: a doc-test marker needs a name")
        name, options = words[0], words[1:]
        fence = FENCE.match(lines[index + 1]) if index + 1 < len(lines) else None
        if fence is None:
            raise MarkerError(f"{where}: the line after `doc-test: {name}` must open a code block")
        code = _body(lines, index + 1, len(fence.group("indent")), where)
        language = fence.group("lang")
        if options[:1] == ["output"]:
            if language != "text" or name in outputs or options[1:] not in ([], ["stdout"]):
                raise MarkerError(f"{where}: `{name} output [stdout]` marks one ```text block")
            outputs[name] = Block(name, index + 2, language, code, stdout=options[1:] == ["stdout"])
            continue
        if language not in RUNNABLE:
            raise MarkerError(
                f"{where}: `{name}` marks a ```{language} block; runnable: {RUNNABLE}"
            )
        if name in runs:
            raise MarkerError(f"{where}: `{name}` is marked twice")
        runs[name] = Block(name, index + 2, language, code, **_options(options, where))
    for name in outputs:
        if name not in runs:
            raise MarkerError(f"the output of `{name}` is shown, but no block `{name}` runs")
    marked = Marked(runs, outputs)
    for name in runs:
        marked.chain(name)
    return marked


def _body(lines: list[str], opening: int, indent: int, where: str) -> str:
    body: list[str] = []
    for line in lines[opening + 1 :]:
        if line.strip() == "```":
            return "\n".join(part[indent:] for part in body) + "\n"
        body.append(line)
    raise MarkerError(f"{where}: the code block is never closed")


def _options(words: list[str], where: str) -> dict[str, object]:
    options: dict[str, object] = {}
    rest = list(words)
    while rest:
        word = rest.pop(0)
        if word == "pytest":
            options["pytest"] = True
        elif word in ("after", "exit") and rest:
            value = rest.pop(0)
            options[word] = int(value) if word == "exit" else value
        else:
            raise MarkerError(f"{where}: unknown doc-test option `{word}`")
    return options


def as_the_readme_writes_it(output: str, *, checkout: Path, demo: Path, home: Path) -> str:
    """Scratch paths back to the README's (longest first, so a path inside another
    is replaced whole), and the end of each line trimmed."""
    for real, shown in sorted(
        ((str(checkout), README_CHECKOUT), (str(demo), README_DEMO), (str(home), "~")),
        key=lambda pair: -len(pair[0]),
    ):
        output = output.replace(real, shown)
    return "\n".join(line.rstrip() for line in output.splitlines())


def mismatch(expected: str, actual: str) -> str:
    """ "" when `actual` matches the README's `expected` output, else a diff that shows
    where they part (`...` in `expected` stands for text the README leaves out)."""
    expected, actual = (SESSION_ID.sub("<session id>", text) for text in (expected, actual))
    pattern = ""
    for written in expected.rstrip("\n").splitlines():
        line = written.rstrip()
        if line.strip() == "...":
            pattern += ANY_LINES
            continue
        parts = [re.escape(part) for part in line.split("...")]
        pattern += "[^\n]*".join(parts) + r"\n" + (ANY_LINES if line.endswith("...") else "")
    if re.fullmatch(pattern, actual.rstrip("\n") + "\n"):
        return ""
    diff = difflib.unified_diff(
        expected.rstrip("\n").splitlines(),
        actual.rstrip("\n").splitlines(),
        "README.md (... matches anything)",
        "what the block printed",
        lineterm="",
    )
    return "\n".join(diff)
