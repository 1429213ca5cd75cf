"""Random bash lines from bash's grammar around hidden marker commands, and a runner
that executes a line in real bash exactly as the `bash` tool does.

The generator mixes what bash reads in ways a model of it can get wrong: the three
quoting kinds and `$'...'`, here-documents with every spelling of the delimiter and
bodies that end early or expand, parameter expansions with operators, `$_`,
indirection and transformations, arithmetic and subscripts (`[[ ... -eq ]]`, `-v`,
`let`, `printf -v`, `read`, `declare`), backquotes nested with escapes, process
substitution, line continuations anywhere (inside words and operators), comments,
compound commands and deep nesting. A marker `touch DIR/MARK_n` hides somewhere in
most lines: in a substitution, in text that bash may or may not run, in a body line.

`run_line` runs `bash -c LINE` (the argv the tool uses, with the workspace as cwd and
stdin from /dev/null) in a scratch directory, with `PATH` holding only `cat` and
`touch`, and bash's own trace (`SHELLOPTS=xtrace` written to a descriptor of its own,
inherited by every nested shell) naming every simple command that ran, builtins
included. An allowed line may only run what the rules allowed (`echo`, `cat`,
`true`): a marker file or any other name in the trace is a command the checker did
not see.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from assembler.tools.environment import tool_environment

#: What an allowed line may run: the allowed programs and the wrappers the checker
#: sees through to them.
ALLOWED_NAMES = frozenset({"echo", "cat", "true", "command", "builtin", "exec"})
RULES = ("bash(echo *)", "bash(cat *)", "bash(true)")
#: The same with the builtins the checker models, for a run that exercises them.
WIDE_RULES = (
    *RULES, "bash(printf *)", "bash(test *)", "bash([ *)", "bash(cd *)", "bash(: *)",
    "bash(pwd)", "bash(type *)",
)  # fmt: skip
#: What lines allowed by `WIDE_RULES` may run (bash's trace quotes `[`).
WIDE_NAMES = ALLOWED_NAMES | {"printf", "test", "'['", "cd", ":", "pwd", "type"}
_TRACE = re.compile(r"^\++ (\S*)", re.MULTILINE)


_QUOTED = (
    "text", "$x", "${x}", "${#x}", "'single'", '\\"', "\\$", "\\`", "\\\\", "\\\n", "$",
    "$'x'", "a\nb", "#", "é", "$?",
)  # fmt: skip


_NAMES = (
    "echo", "cat", "true", "echo", "cat", "'echo'", 'e"ch"o', "\\echo", "ec\\\nho", "$'echo'",
    "ech''o", "command echo", "builtin echo", "time echo", "echo -e", "cat --", "true;",
    "echo #c", "exec echo", ">/dev/null echo", "2>&1 cat", "$\\\n'echo'",
    "echo $\\\n(echo c)", "time -p -- echo", "! echo", "{ echo;}", "{echo a;}",
)  # fmt: skip
_BUILTIN_NAMES = (
    "printf '%s\\n'", "printf --", "test -n", "[ -z x ] ||", "[ a = a ] &&", "cd . &&", ":",
    "pwd;", "type echo;",
)  # fmt: skip


class LineGenerator:
    """Lines around markers; `rng` decides everything, so a seed reproduces a run.
    Choices are functions, called only once chosen (a marker or a here-document body
    is made only for what ends up in the line)."""

    def __init__(self, rng: random.Random, marker_dir: str) -> None:
        self.rng = rng
        self.dir = marker_dir
        self.markers = 0
        self.frames: list[list[str]] = [[]]
        self.poison = 0.3

    def line(self) -> str:
        self.frames = [[]]
        self.poison = self.rng.choice((0.0, 0.02, 0.05, 0.15, 0.3))
        text = self.list_(0)
        if self.frames[0]:
            text += "\n" + "\n".join(self.frames[0])
        if self.rng.random() < 0.2:
            text = self.continuations(text)
        return text

    def marker(self) -> str:
        self.markers += 1
        return f"touch {self.dir}/MARK_{self.markers}"

    def pick(self, *options: str) -> str:
        return self.rng.choice(options)

    def call(self, *options: Callable[[], str]) -> str:
        return self.rng.choice(options)()

    def bad(self) -> bool:
        """Whether this choice may hide a marker (the line's own rate)."""
        return self.rng.random() < self.poison

    # -- lists and commands --

    def list_(self, depth: int) -> str:
        count = self.rng.choice((1, 1, 1, 2, 2, 3))
        parts = [self.command(depth)]
        for _ in range(count - 1):
            separator = self.pick("; ", " && ", " || ", " | ", "\n", " & ", " |& ", ";", "\n\n")
            if "\n" in separator and self.frames[-1]:
                separator = "\n" + "\n".join(self.frames[-1]) + separator
                self.frames[-1].clear()
            parts.append(separator + self.command(depth))
        return "".join(parts)

    def command(self, depth: int) -> str:
        roll = self.rng.random()
        if depth > 2 or roll < 0.6:
            return self.simple(depth)
        if roll < 0.63:
            return self.marker()
        inner = self.list_(depth + 1)
        good = (
            lambda: f"( {inner} )",
            lambda: f"({inner})",
            lambda: f"{{ {inner}; }}",
            lambda: f"{{ {inner}\n}}",
            lambda: f"if {inner}; then {self.list_(depth + 1)}; fi",
            lambda: f"if true; then {inner}; else {self.list_(depth + 1)}; fi",
            lambda: f"while false; do {inner}; done",
            lambda: f"until true; do {inner}; done",
            lambda: f"! {inner}",
            lambda: f"time {inner}",
            lambda: f"time -p {inner}",
            lambda: f"time -p -- {inner}",
            lambda: f"time -- {inner}",
            lambda: f"{{ {inner}; }} 2>/dev/null",
            lambda: f"( {inner} ) >/dev/null",
            lambda: f"{{({inner})}}",
            lambda: f"!({inner})",
            lambda: f"if {inner};then {self.list_(depth + 1)};fi",
            lambda: f"{{ {inner};}}>/dev/null 2>&1",
            lambda: f"( # c\n{inner}\n)",
            lambda: f"$(# c\n{inner}\n)",
        )
        if not self.bad():
            return self.call(*good)
        return self.call(
            lambda: f"for v in a; do {inner}; done",
            lambda: f"case a in a) {inner};; esac",
            lambda: f"[[ {self.test_operand()} ]] && {inner}",
            lambda: f"(( {self.arithmetic()} )) ; {inner}",
            lambda: f"f() {{ {inner}; }}; f",
            lambda: f"function g {{ {inner}; }}; g",
            lambda: f"coproc {{ {inner}; }}",
        )

    def simple(self, depth: int) -> str:
        name = self.name()
        words = [self.word(depth) for _ in range(self.rng.choice((0, 1, 1, 2, 3)))]
        redirections = []
        if self.rng.random() < 0.3:
            redirections.append(self.redirection(depth))
        return " ".join([name, *words, *redirections])

    def name(self) -> str:
        if not self.bad():
            if self.rng.random() < 0.2:
                return self.pick(*_BUILTIN_NAMES)
            return self.pick(*_NAMES)
        m = self.marker()
        return self.pick(
            f"printf -v 'a[$({m})]' x; echo",
            f"read 'a[$({m})]' <<< x; echo",
            f"declare 'a[$({m})]=1'; echo",
            f"let 'a[$({m})]'; echo",
            f"test -v 'a[$({m})]'; echo",
            f"[ -v 'a[$({m})]' ]; echo",
            f"[ 'a[$({m})]' -eq 0 ]; echo",
            f"[[ -v 'a[$({m})]' ]]; echo",
            f"[[ 'a[$({m})]' -eq 0 ]]; echo",
            f"unset 'a[$({m})]'; echo",
            f"true '$({m})'; echo ${{_@P}}",
            f"true 'a[$({m})]'; echo $(( _ ))",
            f"true 'a[$({m})]'; echo ${{!_}}",
            f"true 'a[$({m})]'; [[ $_ -eq 0 ]]; echo",
            f"eval '{m}'; echo",
            f"bash -c '{m}'; echo",
            f"x=1 {m}; echo",
            f"mapfile -C '{m}' -c 1 <<< x; echo",
            f"compgen -W '$({m})' >/dev/null; echo",
            f"env {m}; echo",
            f"tou\\\nch {self.dir}/MARK_c{self.markers}; echo",
            f"printf '%s' '$({m})'; echo",
        )

    # -- words --

    def word(self, depth: int) -> str:
        return "".join(self.part(depth) for _ in range(self.rng.choice((1, 1, 2, 3))))

    def part(self, depth: int) -> str:
        roll = self.rng.random()
        if roll < 0.35:
            return self.pick(
                "a", "x.txt", "-n", "#c", "{a,b}", "*", "~", "a=b", "[x]", "]", "{}",
                "%", "@", "!", "--", "1", "2", "a\\ b", "\\$x", "\\'", '\\"', "\\\\",
                "\\\n", "é", "\\#", "=", ":", "{", "}", "if", "then", "fi", "EOF",
            )  # fmt: skip
        if roll < 0.5:
            return "'" + self.text().replace("'", "") + "'"
        if roll < 0.7:
            return '"' + self.quoted(depth) + '"'
        return self.expansion(depth)

    def text(self) -> str:
        if not self.bad():
            return self.pick("plain text", 'a"b', "a\\b", "$x", "a\nb", "${x:-y}", "EOF", "\\\n")
        m = self.marker()
        return self.pick(f"$({m})", f"`{m}`", m, f"a[$({m})]")

    def quoted(self, depth: int) -> str:
        pieces = []
        for _ in range(self.rng.choice((1, 2, 3))):
            if not self.bad():
                if depth < 3 and self.rng.random() < 0.1:
                    pieces.append(self.sub("$(", lambda: self.list_(depth + 1)))
                    continue
                pieces.append(self.pick(*_QUOTED))
                continue
            m = self.marker()
            pieces.append(
                self.pick(
                    "$_",
                    f"$({m})",
                    f"${{x:-$({m})}}",
                    f"${{x:-'$({m})'}}",
                    f"`{m}`",
                    f"${{x:-`{m}`}}",
                    f"${{x:-'{m}'}}",
                )
            )
        return "".join(pieces)

    def expansion(self, depth: int) -> str:
        inner = (lambda: self.list_(depth + 1)) if depth < 3 else (lambda: "echo deep")
        if not self.bad():
            return self.call(
                lambda: self.sub("$(", inner),
                lambda: self.sub("$( ", inner, " )"),
                lambda: self.sub("<(", inner),
                lambda: self.sub(">(", inner),
                lambda: self.sub("<(", lambda: self.simple(depth + 1)),
                lambda: self.sub("$(\n", inner, "\n)"),
                lambda: '"' + self.sub("$(", self.heredoc) + '"',
                lambda: self.sub("$(", self.heredoc),
                *(lambda v=v: v for v in (
                    "$x", "${x}", "$'a\\tb'", "$'it\\'s'", "$?", "$#", "$1", "${#x}", "$$",
                    "$-", "$@", '"$@"', "<(echo x)", ">(cat)", "<(cat <<'E'\nE\n)",
                )),
            )  # fmt: skip
        m = self.marker()
        return self.call(
            *(lambda v=v: v for v in (
                f"$({m})", f"`{m}`", f"`echo \\`{m}\\``", f"<({m})", "$_", "${!x}", "${x@P}",
                f"${{x:-{m}}}", f"${{x:-`{m}`}}", f"${{x:-<({m})}}", f"${{x:-$({m})}}",
                "$'\\x41'", '$"hi"', f"${{a['$({m})']}}",
            )),
            lambda: f"$(({self.arithmetic()}))",
            lambda: f"$[{self.arithmetic()}]",
            lambda: '"' + self.sub("$(", self.heredoc) + '"',
            lambda: self.sub("$(", self.heredoc, ")"),
        )  # fmt: skip

    def sub(self, opening: str, inner: Callable[[], str], closing: str = ")") -> str:
        """A substitution: here-document bodies started inside it are written inside
        it, before its closing parenthesis."""
        self.frames.append([])
        text = inner()
        bodies = self.frames.pop()
        if bodies:
            text += "\n" + "\n".join(bodies) + "\n"
        return opening + text + closing

    def arithmetic(self) -> str:
        m = self.marker()
        return self.pick("1+2", f"a[$({m})]", f"'a[$({m})]'", "x", "_", "0")

    def test_operand(self) -> str:
        m = self.marker()
        return self.pick(f"'a[$({m})]' -eq 0", f"-v 'a[$({m})]'", "-f x", f"$({m})", "a == a")

    # -- redirections and here-documents --

    def redirection(self, depth: int) -> str:
        if self.rng.random() < 0.4:
            return self.heredoc()
        if not self.bad():
            return self.pick(
                ">/dev/null", "2>&1", "2>/dev/null", "</dev/null", "&>/dev/null", ">&2",
                "2>\\\n/dev/null", "<<< word", "<<<'$x'", '<<< "$x"', "<&-", "2>&-",
            )  # fmt: skip
        return self.call(
            lambda: f"<<< {self.word(depth)}",
            lambda: "{fd}>/dev/null",
            lambda: f">{self.dir}/out",
            lambda: f"<<< $({self.marker()})",
        )

    def heredoc(self) -> str:
        """`cat <<DELIM`; the body goes after the next newline of this frame (at the
        end of the line, or, in a `$(...)`, inside it)."""
        plain = self.pick("EOF", "E", "END", "EOF_1")
        if not self.bad():
            spelling = self.pick(plain, f"'{plain}'", f'"{plain}"')
        else:
            spelling = self.pick(
                'E"O"F', "EO'F'", 'E""OF', "$'EOF'", f"\\{plain}", '"E"OF', f" {plain}",
                f"-{plain}",
            )  # fmt: skip
        ends = re.sub(r"[\"'$\\ -]", "", spelling)
        lines = []
        for _ in range(self.rng.choice((0, 1, 2, 3))):
            if not self.bad():
                lines.append(self.pick("hello", "'quoted'", '"dq"', ")", "  indented", "# not"))
                continue
            m = self.marker()
            bad = (
                f"$({m})", f"  $({m})", f"`{m}`", f"${{x:-$({m})}}", m, "\\", "a\\",
                f"{ends}\n{m}", f"{ends})\n{m}", f" {ends}\n{m}", f"\t{ends}\n{m}",
                f"{ends} x\n{m}", "$x", "\\$(x)",
            )  # fmt: skip
            lines.append(self.pick(*bad))
        closing = ends if not self.bad() else self.pick(spelling.strip(), f"\t{ends}", f"{ends})")
        operator = self.pick("<<", "<<", "<<-")
        self.frames[-1].append("\n".join([*lines, closing]))
        return f"cat {operator}{spelling}"

    def continuations(self, text: str) -> str:
        """A backslash-newline at a few random places: bash removes it before reading
        anything else (except inside single quotes, comments and quoted bodies)."""
        chars = list(text)
        for _ in range(self.rng.choice((1, 2, 3))):
            chars.insert(self.rng.randrange(len(chars) + 1), "\\\n")
        return "".join(chars)


@dataclass
class Outcome:
    """What one line did in bash: markers created and names bash ran."""

    markers: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    timed_out: bool = False

    def hidden(self, allowed: frozenset[str] = ALLOWED_NAMES) -> list[str]:
        return [*self.markers, *(n for n in self.names if n not in allowed)]


class BashRunner:
    """Runs lines as the tool does, in `scratch` (see the module docstring); the
    markers of `LineGenerator(rng, runner.work)` land in `runner.work`."""

    def __init__(self, scratch: Path) -> None:
        self.bash = shutil.which("bash") or "bash"
        bin_dir = scratch / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        for program in ("cat", "touch"):
            found = shutil.which(program)
            assert found is not None
            (bin_dir / program).symlink_to(found)
        self.work = scratch / "work"
        self.work.mkdir(exist_ok=True)
        self.env = {
            **tool_environment(os.environ),
            "PATH": str(bin_dir),
            "SHELLOPTS": "xtrace",
            "PS4": "+ ",
            "BASH_FUNC_command_not_found_handle%%": "() { return 127; }",
        }

    def run(self, line: str, timeout: float = 10.0) -> Outcome:
        for leftover in self.work.iterdir():
            _remove(leftover)
        read_fd, write_fd = os.pipe()
        try:
            process = subprocess.Popen(
                [self.bash, "-c", line],
                cwd=self.work,
                env={**self.env, "BASH_XTRACEFD": str(write_fd)},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(write_fd,),
                start_new_session=True,
            )
        finally:
            os.close(write_fd)
        trace, timed_out = _read_all(read_fd, timeout)
        if timed_out:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        outcome = Outcome(timed_out=timed_out)
        outcome.names = _TRACE.findall(trace.decode("utf-8", "replace"))
        outcome.markers = sorted(p.name for p in self.work.glob("MARK_*"))
        return outcome


def _read_all(fd: int, timeout: float) -> tuple[bytes, bool]:
    """Everything written to the trace until every process holding it has exited
    (background jobs included), or the timeout."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return b"".join(chunks), True
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return b"".join(chunks), False
                chunks.append(chunk)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@dataclass
class Report:
    """A differential run: lines generated and allowed, the allowed lines that ran a
    command the checker did not see (with what ran), and how many of a sample of
    refused lines did run a marker (proof that the markers are live)."""

    lines: int = 0
    allowed: int = 0
    hidden: list[tuple[str, list[str]]] = field(default_factory=list)
    refused_run: int = 0
    refused_fired: int = 0
    allowed_with: dict[str, int] = field(default_factory=dict)


#: Constructs counted among allowed lines, to show the modeled subset is exercised.
FEATURES = {
    "here-document": "<<",
    "command substitution": "$(",
    "process substitution": "<(",
    "double quotes": '"',
    "single quotes": "'",
    "continuation": "\\\n",
    "parameter": "${",
    "subshell or group": "( ",
}


def differential(
    seed: int, count: int, scratch: Path, *, refused_every: int = 50, wide: bool = False
) -> Report:
    """Generate `count` lines from `seed`, ask the checker with `RULES` (`WIDE_RULES`
    when `wide`; default ask), and run every allowed line (and every
    `refused_every`-th refused one) in bash."""
    # Imported here: the module is also imported by tools that only generate lines.
    from assembler.manifest.model import PermissionsSpec
    from assembler.permissions import PermissionPolicy

    runner = BashRunner(scratch)
    generator = LineGenerator(random.Random(seed), str(runner.work))
    rules, allowed = (WIDE_RULES, WIDE_NAMES) if wide else (RULES, ALLOWED_NAMES)
    policy = PermissionPolicy.from_spec(
        PermissionsSpec(default="ask", allow=rules), workspace=runner.work
    )
    report = Report()
    for index in range(count):
        line = generator.line()
        report.lines += 1
        if policy.decide("bash", {"command": line}, None).verdict == "allow":
            report.allowed += 1
            for name, text in FEATURES.items():
                if text in line:
                    report.allowed_with[name] = report.allowed_with.get(name, 0) + 1
            hidden = runner.run(line).hidden(allowed)
            if hidden:
                report.hidden.append((line, hidden))
        elif index % refused_every == 0:
            report.refused_run += 1
            if any(m.startswith("MARK_") for m in runner.run(line).hidden()):
                report.refused_fired += 1
    return report
