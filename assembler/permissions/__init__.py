"""Permissions: which tool calls run, which need approval, which never run.

The manifest's `permissions` holds `allow`, `ask` and `deny` rules (`read`,
`bash(git diff *)`, `edit(tests/**)`, `mcp:github/*`) and a `default`. This package
parses them (`rules`), reads bash command lines as `bash -c` does (`bash`, with the
recognizer in `bash_grammar`, `bash_words`, `bash_reader`, and `wrappers`,
`bash_builtins`, `bash_treesitter`), resolves a call's main argument as the tool
would (`subjects`), matches (`command_patterns`, `path_patterns`, `matching`) and
decides (`policy`):

    policy = PermissionPolicy.from_spec(manifest.permissions, workspace=manifest.workspace)
    decision = policy.decide("bash", {"command": "git status"}, tool)
    if decision.verdict == "ask" and nobody_can_answer:
        decision = decision.unanswered()

The runner, the CLI prompt, RPC and the audit trace use this API; nothing here
prints, asks or runs a tool.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assembler.permissions.bash import CommandLine, SimpleCommand, parse_command_line
    from assembler.permissions.policy import (
        NEEDS_APPROVAL,
        PERMISSION_MODES,
        Decision,
        PermissionMode,
        PermissionPolicy,
    )
    from assembler.permissions.rules import Rule, Verdict, parse_rule

__all__ = [
    "NEEDS_APPROVAL",
    "PERMISSION_MODES",
    "CommandLine",
    "Decision",
    "PermissionMode",
    "PermissionPolicy",
    "Rule",
    "SimpleCommand",
    "Verdict",
    "parse_command_line",
    "parse_rule",
]

# Where each name lives, imported on first use: `validate` and `render --dry-run` check
# rules with `rules` and the pattern modules alone, and need neither the bash grammar
# nor the policy (start-up cost, issue 21).
_HOMES = {
    "CommandLine": "bash",
    "SimpleCommand": "bash",
    "parse_command_line": "bash",
    "NEEDS_APPROVAL": "policy",
    "PERMISSION_MODES": "policy",
    "Decision": "policy",
    "PermissionMode": "policy",
    "PermissionPolicy": "policy",
    "Rule": "rules",
    "Verdict": "rules",
    "parse_rule": "rules",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
