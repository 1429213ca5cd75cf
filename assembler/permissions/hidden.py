"""What `grep`, `find` and `ls` leave out: the paths the manifest's `read` rules keep
from the model.

A `read` deny rule promises that the model does not see a file's content, so every
tool that shows content or names of files must honour it: `grep` skips a denied
file's lines, `find` and `ls` do not list it (a file's name can be a secret too, and
listing it invites a `read`). An `ask` rule on `read` hides the same way, since
nobody approved showing those files in bulk (except under `--permission-mode
bypass`, where such a read runs without asking anyway). A bare `read` rule hides
everything. The patterns are the rules' own path patterns
(`assembler.permissions.path_patterns`), matched against workspace-relative paths
exactly as `read` matches them; the tools get them as regular expressions on the
rooted path (`/secrets/prod.env`), which the search worker can use without
importing this package.

Other tools that can read files (`bash`, MCP servers, Python tools) are not
governed by them; `validate` warns where such a tool sits beside a `read` rule.
"""

from __future__ import annotations

import fnmatch

from assembler.errors import PermissionRuleError
from assembler.manifest.model import PermissionsSpec
from assembler.permissions.path_patterns import compile_path_pattern
from assembler.permissions.rules import Rule, parse_rule

EVERYTHING = "(?:/[^/]+)*"
"""Matches every rooted path (and the workspace itself, `""`)."""


def read_rules(spec: PermissionsSpec, mode: str = "default") -> list[Rule]:
    """The deny (and, but under `bypass`, ask) rules that name the built-in `read`."""
    texts = [*spec.deny, *(spec.ask if mode != "bypass" else ())]
    found: list[Rule] = []
    for text in texts:
        try:
            rule = parse_rule(text)
        except PermissionRuleError:
            continue  # `validate` reports it, and the build refuses it
        if rule.server is None and fnmatch.fnmatchcase("read", rule.tool):
            found.append(rule)
    return found


def hidden_patterns(spec: PermissionsSpec, mode: str = "default") -> tuple[str, ...]:
    """Regular expressions, one per `read` rule, over rooted workspace paths."""
    patterns: list[str] = []
    for rule in read_rules(spec, mode):
        if rule.pattern is None:
            return (EVERYTHING,)
        compiled = compile_path_pattern(rule.pattern)
        if not compiled.never:
            patterns.append(compiled.regex.pattern)
    return tuple(dict.fromkeys(patterns))
