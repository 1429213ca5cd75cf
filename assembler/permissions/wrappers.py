"""Commands that run other commands: `env rm x`, `timeout 5 pytest`, `bash -c '...'`.

A permission rule is about the command that really runs, so wrappers are seen through.
Two kinds:

- *Transparent for allow and deny*: `timeout`, `time`, `nice`, `nohup`, `stdbuf`,
  `command`, `builtin`. They run their command unchanged, so `timeout 5 pytest -q` is
  allowed by `bash(pytest *)` as well as by `bash(timeout 5 pytest *)`.
- *Transparent for deny only*: `env` (it can set `LD_PRELOAD`, `PATH`, ...), `exec`,
  `sudo`, `doas`, `xargs` (it adds arguments read from its input), `coproc`. `env rm x`
  is denied by `bash(rm *)`, but `bash(git status)` does not allow
  `env GIT_DIR=/x git status`.

`alias`, `hash`, `enable`, `source` and `.` change what later command names run, so a
line holding one is never allowed by a rule and is asked about when a deny rule exists.
Commands that run a *string* as shell code (`bash -c`, `sh -c`, `eval`, `trap`,
`watch`) and shells that read commands from their input (`... | sh`) are never
allowed by a rule; when the string is literal it is parsed too, so a deny rule still
sees `bash -c 'rm x'`. Only `eval`, `trap` and `bash -c` with the plain options
(`-c`, `-e`, `-u`, `-x`, `-v`) read the string as the checker models it; another shell
(`sh` is dash on Debian: `&>` is not a redirection there), `bash -O extglob`, `bash -i`
or `watch` read it by other rules, so what the parser finds in it can be denied but
cannot rule a deny out. A wrapper whose options are not understood hides its command:
the call is then never allowed without asking.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Word:
    """One word of a command: its value as the program receives it when `literal`,
    otherwise its source text (it holds an expansion)."""

    value: str
    literal: bool = True
    shown: str = ""  # the source text, for a word that is not literal

    @property
    def display(self) -> str:
        return self.shown or self.value


@dataclass(frozen=True)
class _Options:
    values: frozenset[str] = frozenset()  # options taking the next word as their value
    flags: frozenset[str] = frozenset()
    positional: int = 0  # words between the options and the command (timeout's duration)
    assignments: bool = False  # `env NAME=VALUE cmd`
    numeric: bool = False  # `nice -10 cmd`


def _opts(values: str = "", flags: str = "", **kw: int | bool) -> _Options:
    return _Options(frozenset(values.split()), frozenset(flags.split()), **kw)  # type: ignore[arg-type]


#: name -> (options, also transparent for allow rules)
WRAPPERS: dict[str, tuple[_Options, bool]] = {
    "timeout": (
        _opts(
            "-s --signal -k --kill-after",
            "--foreground --preserve-status -v --verbose",
            positional=1,
        ),
        True,
    ),
    "time": (_opts("", "-p"), True),
    "nice": (_opts("-n --adjustment", "", numeric=True), True),
    "nohup": (_opts(), True),
    "stdbuf": (_opts("-i -o -e --input --output --error"), True),
    "command": (_opts("", "-p -v -V"), True),
    "builtin": (_opts(), True),
    "env": (
        _opts("-u --unset -C --chdir", "- -i --ignore-environment -0 --null", assignments=True),
        False,
    ),
    "exec": (_opts("-a", "-c -l"), False),
    "sudo": (_opts("-u --user -g --group -h --host -D --chdir", "-E -H -n -S -k -b -P"), False),
    "doas": (_opts("-u -C", "-n -s"), False),
    "xargs": (
        _opts(
            "-I -n -L -P -d -E -s -a --max-args --max-lines --max-procs --delimiter --eof "
            "--max-chars --arg-file --replace --process-slot-var",
            "-0 --null -r --no-run-if-empty -t --verbose -p --interactive -x --exit -o --open-tty",
        ),
        False,
    ),
    "coproc": (_opts(), False),
}
SHELLS = frozenset(
    {"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "busybox", "ash", "yash", "posh",
     "rbash", "csh", "tcsh"}
)  # fmt: skip
_SHELL_VALUES = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
#: procps `watch`: `-d`/`--differences` takes its value only after `=` (`-d rm x` runs `rm x`).
_WATCH = _opts(
    "-n --interval -q --equexit",
    "-b --beep -c --color -d --differences -e --errexit -g --chgexit -p --precise "
    "-t --no-title -w --no-wrap -x --exec",
)
#: Run their (joined) arguments as shell code.
STRING_RUNNERS = frozenset({"eval", "trap", "watch"})
#: Change what later command names in the same shell run (`hash -p /bin/rm git`),
#: or run a file in it: what runs afterwards cannot be known from the line.
SHADOWING = frozenset({"alias", "hash", "enable", "source", "."})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class Unwrapped:
    """What a command line's words really run.

    `allow_views` and `deny_views` are the word lists rules of each kind are matched
    against (the command as written first); `code` holds shell strings to parse too
    (`bash -c STRING`), each with whether the shell reading it is the one the checker
    models; `problem` says why no allow rule covers the command; `hidden` that some of
    what runs could not be seen.
    """

    allow_views: list[tuple[Word, ...]]
    deny_views: list[tuple[Word, ...]]
    code: list[tuple[str, bool]] = field(default_factory=list)
    problem: str = ""
    hidden: bool = False


def unwrap(words: Sequence[Word]) -> Unwrapped:
    current = tuple(words)
    result = Unwrapped([current], [current])
    allow_too = True
    while current and current[0].literal:
        name = current[0].value.rsplit("/", 1)[-1]
        if name in SHELLS:
            _shell(current, result)
            return result
        if name in STRING_RUNNERS:
            _string_runner(name, current, result)
            return result
        if name in SHADOWING:
            result.problem = f"`{name}` changes what later commands run"
            result.hidden = True
            return result
        if name not in WRAPPERS:
            return result
        options, allow_transparent = WRAPPERS[name]
        inner = _strip(current, options)
        if inner is None:
            result.problem = f"`{name}` has options that are not understood"
            result.hidden = True
            return result
        if not inner:
            return result
        if name == "xargs":
            result.problem = "`xargs` adds arguments read from its input"
        allow_too = allow_too and allow_transparent and "/" not in current[0].value
        if allow_too:
            result.allow_views.append(inner)
        result.deny_views.append(inner)
        current = inner
    return result


def _strip(words: tuple[Word, ...], options: _Options) -> tuple[Word, ...] | None:
    """The words after the wrapper's options, or None when an option is unknown."""
    i = 1
    while i < len(words):
        word = words[i]
        text = word.value
        if not word.literal:
            return None  # an expanded option could be anything
        if text == "--":
            i += 1
            break
        if options.assignments and _ASSIGNMENT.match(text):
            i += 1
            continue
        if text in options.flags:
            i += 1
            continue
        if not text.startswith("-") or text == "-":
            break
        if text in options.values:
            i += 2
            continue
        if text.startswith("--") and text.split("=", 1)[0] in options.values:
            i += 1
            continue
        if not text.startswith("--") and text[:2] in options.values:
            i += 1  # `-oL`, `-n5`: the value is attached
            continue
        if options.numeric and re.fullmatch(r"-\d+", text):
            i += 1
            continue
        if not text.startswith("--") and all(f"-{c}" in options.flags for c in text[1:]):
            i += 1
            continue
        return None
    i += options.positional
    return words[i:] if i <= len(words) else ()


def _shell(words: tuple[Word, ...], result: Unwrapped) -> None:
    """`bash -c STRING`, `bash script.sh`, or a shell reading commands from stdin."""
    i = 1
    command_string = False
    modeled = words[0].value.rsplit("/", 1)[-1] == "bash"
    while i < len(words) and words[i].literal and words[i].value[:1] in "-+":
        text = words[i].value
        if text == "--":
            i += 1
            break
        if text in _SHELL_VALUES:
            modeled = False
            i += 2
            continue
        if not text.startswith("--") and "c" in text[1:]:
            command_string = True
        if not re.fullmatch(r"-[ceuxv]+", text):
            modeled = False  # -i (aliases), -l (profiles), --posix, -O extglob ...
        i += 1
    if command_string:
        result.problem = f"`{words[0].value}` runs a command string"
        if i < len(words) and words[i].literal:
            result.code.append((words[i].value, modeled))
        else:
            result.hidden = True
    elif i >= len(words) or (words[i].literal and words[i].value == "-s"):
        result.problem = f"`{words[0].value}` runs commands read from its input"
        result.hidden = True
    elif not all(w.literal for w in words[: i + 1]):
        result.hidden = True


def _string_runner(name: str, words: tuple[Word, ...], result: Unwrapped) -> None:
    result.problem = f"`{name}` runs a string as shell code"
    args = list(words[1:])
    if name == "eval" and args and args[0].literal and args[0].value == "--":
        args = args[1:]  # bash's eval takes `--` (and no option): `eval -- 'rm x'` runs `rm x`
    elif name == "trap":
        args = _trap_action(args)
    elif name == "watch":
        stripped = _strip(words, _WATCH)
        if stripped is None:
            result.hidden = True  # an option not understood: what it runs is not known
            return
        args = list(stripped)
    if not all(w.literal for w in args):
        result.hidden = True
    elif args:
        # eval and trap run the string in this very shell; watch hands it to `sh -c`
        result.code.append((" ".join(w.value for w in args), name != "watch"))


def _trap_action(args: list[Word]) -> list[Word]:
    """The action `trap ARGS` sets (none when it only prints or resets). Its options
    `-l`, `-p` (and bash 5.3's `-P`) print and set nothing; `--` ends the options, so
    `trap -- 'rm x' EXIT` sets `rm x`; an option bash does not know is stepped over,
    reading more as code than bash would (it refuses the line), never less."""
    i = 0
    while i < len(args) and args[i].literal and args[i].value[:1] == "-" and args[i].value != "-":
        if args[i].value == "--":
            i += 1
            break
        if re.fullmatch(r"-[lpP]+", args[i].value):
            return []
        i += 1
    if i >= len(args) or (args[i].literal and args[i].value == "-"):
        return []  # `trap - EXIT`, `trap -- - EXIT`: reset to the default
    return args[i : i + 1]
