"""Bash's builtins: the few whose arguments are modeled, and why the others are not.

An external program only receives its words; a builtin runs inside the shell and
some evaluate their arguments: `read 'a[$(cmd)]'`, `printf -v 'a[$(cmd)]'`,
`declare`, `let`, `unset` and `[ -v 'a[$(cmd)]' ]` evaluate an array subscript as
arithmetic, which runs command substitutions even from single-quoted text; `mapfile
-C`, `compgen -W`, `complete -C`, `bind -x`, `jobs -x` and `fc` run code of their own.
So a command naming a builtin is modeled only for the builtins listed in `MODELED`,
with the arguments checked where one of them can evaluate text; every other builtin
makes the command unverifiable. `eval`, `trap`, `alias`, `source` ... are handled by
`assembler.permissions.wrappers` (their code is parsed, or what they change is not).

`BUILTINS` is the list of `compgen -b` of bash 5.2; a test compares it with the real
bash, so a new builtin cannot pass for an external program.
"""

from __future__ import annotations

from collections.abc import Sequence

from assembler.permissions.wrappers import SHADOWING, STRING_RUNNERS, Word

BUILTINS = frozenset((
    ".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command",
    "compgen", "complete", "compopt", "continue", "declare", "dirs", "disown", "echo",
    "enable", "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash",
    "help", "history", "jobs", "kill", "let", "local", "logout", "mapfile", "popd", "printf",
    "pushd", "pwd", "read", "readarray", "readonly", "return", "set", "shift", "shopt",
    "source", "suspend", "test", "times", "trap", "true", "type", "typeset", "ulimit",
    "umask", "unalias", "unset", "wait",
))  # fmt: skip
#: Builtins whose arguments are plain data (checked below for `printf` and `test`).
MODELED = frozenset((
    ":", "true", "false", "echo", "printf", "cd", "pwd", "test", "[", "type", "command",
    "builtin", "exec",
))  # fmt: skip


def builtin_problem(views: Sequence[Sequence[Word]]) -> str:
    """Why one of these views of a command (as written, wrappers removed) runs a
    builtin whose arguments are not modeled ("" when none does)."""
    for view in views:
        if not view or not view[0].literal:
            continue
        name = view[0].value
        if name not in BUILTINS or name in STRING_RUNNERS or name in SHADOWING:
            continue
        if name not in MODELED:
            return (
                f"`{name}` is a shell builtin whose arguments are not modeled "
                "(it can set variables or evaluate text as code)"
            )
        arguments = view[1:]
        if name == "printf" and arguments:
            first = arguments[0]
            if not first.literal or (first.value.startswith("-") and first.value != "--"):
                return "`printf` with an option (`-v` evaluates a subscript as code)"
        if name in ("test", "[") and any(
            not a.literal or a.value in ("-v", "-R") for a in arguments
        ):
            return f"`{name}` with `-v`, `-R` or an expansion (a subscript evaluated as code)"
    return ""
