"""The decision for one tool call: allow, ask or deny, and which rule said so.

Precedence is fixed, whatever order the manifest lists rules in: a matching deny
rule, then a matching ask rule, then allow rules, then the `default`. For `bash`, an
allow needs every simple command of the line covered (each by some allow rule), and
a line the checker cannot model exactly (unverifiable) is never allowed by a pattern.

One more rule keeps deny patterns meaningful: when part of a call cannot be checked
against the tool's deny or ask patterns (an unverifiable or hidden part of a bash line,
a value known only at run time that a pattern could match, a path that does not
resolve), the call is asked about rather than allowed, by a rule or by the default
alike; under `bypass`, which answers no question, it is denied when a deny pattern
could not be ruled out.

The permission mode then changes what an `ask` becomes (`default` leaves it for a
person; `accept-edits` allows `write`/`edit` inside the workspace; `deny-asks`
denies; `bypass` allows). When nobody can answer, `Decision.unanswered()` turns an
`ask` into a deny the model can read.

A policy is immutable: `with_session_rule` (what "allow for the rest of the session"
adds) and `with_mode` return new policies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from assembler.errors import PermissionRuleError, ToolError
from assembler.manifest.model import PermissionsSpec
from assembler.permissions.bash import CommandLine
from assembler.permissions.command_patterns import quote_word
from assembler.permissions.matching import CommandIndex, CompiledRule
from assembler.permissions.path_patterns import escape_path
from assembler.permissions.rules import PRECEDENCE, Verdict
from assembler.permissions.subjects import (
    FILE_EDIT_TOOLS,
    Subject,
    ToolLike,
    is_builtin,
    subject_of,
)
from assembler.tools.builtin.workspace import workspace_root

PermissionMode = Literal["default", "accept-edits", "deny-asks", "bypass"]
PERMISSION_MODES: tuple[PermissionMode, ...] = ("default", "accept-edits", "deny-asks", "bypass")
Origin = Literal["rule", "session", "default", "mode"]

NEEDS_APPROVAL = "needs approval: rerun interactively or add an allow rule"


@dataclass(frozen=True)
class Decision:
    """What the policy decided. `rule` is the rule (or, for a bash line allowed by
    several, the rules joined by `, `) that decided, None when the default or the
    mode did; `reason` is one sentence for the person and the model; `origin` says
    what decided, for the audit trace."""

    verdict: Verdict
    reason: str
    rule: str | None = None
    origin: Origin = "rule"

    def unanswered(self) -> Decision:
        """The decision when nobody can answer an `ask` (no TTY, `-p`, `--json`)."""
        if self.verdict != "ask":
            return self
        return Decision("deny", NEEDS_APPROVAL, self.rule, self.origin)


@dataclass(frozen=True)
class PermissionPolicy:
    """Rules, default and mode for one agent; see the module docstring."""

    workspace: Path
    default: Verdict = "allow"
    rules: tuple[CompiledRule, ...] = ()
    mode: PermissionMode = "default"
    # The rules naming each (tool, source) seen so far: a call is matched only against
    # its own tool's rules, whatever the number of rules for other tools.
    _by_tool: dict[tuple[str, str], list[CompiledRule]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _matchers: dict[tuple[str, str, Verdict], CommandIndex] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    _root: list[Path] = field(default_factory=list, init=False, compare=False, repr=False)
    _grouped: dict[tuple[str, str], _Groups] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    @classmethod
    def from_spec(
        cls,
        spec: PermissionsSpec | None,
        *,
        workspace: Path,
        mode: PermissionMode = "default",
    ) -> PermissionPolicy:
        """Compile a manifest's `permissions`. A malformed rule raises
        `PermissionRuleError` (`validate` reports it first, with its position)."""
        spec = spec or PermissionsSpec()
        rules = [
            CompiledRule.parse(text, verdict)
            for verdict in PRECEDENCE
            for text in getattr(spec, verdict)
        ]
        return cls(workspace, spec.default, tuple(rules), _mode(mode))

    def with_mode(self, mode: PermissionMode) -> PermissionPolicy:
        return replace(self, mode=_mode(mode))

    def with_session_rule(self, rule: str) -> PermissionPolicy:
        """A new policy that also allows `rule` (deny and ask rules still win)."""
        return replace(self, rules=(*self.rules, CompiledRule.parse(rule, "allow", session=True)))

    def describe(self) -> dict[str, Any]:
        """The effective rules, for `render --format json` and the audit trace."""
        listed: dict[str, Any] = {"default": self.default, "mode": self.mode}
        for verdict in PRECEDENCE:
            listed[verdict] = [r.text for r in self.rules if r.verdict == verdict and not r.session]
        listed["session"] = [r.text for r in self.rules if r.session]
        return listed

    def decide(
        self, tool_name: str, arguments: Mapping[str, Any], tool: ToolLike | None
    ) -> Decision:
        """Decide one call. `tool` is the registered tool (its `source` tells an MCP
        tool from a built-in, and names its main argument); None for a name no tool
        has, which is then treated as a built-in if it has a built-in's name."""
        decision, subject = self._by_rules(tool_name, arguments, tool)
        if decision.verdict != "ask" or self.mode == "default":
            return decision
        if self.mode == "bypass":
            unchecked = self._unchecked_deny(tool_name, tool, subject)
            if unchecked:
                # bypass skips questions; it does not switch deny rules off
                reason = f"{unchecked} (permission mode `bypass` skips questions, not deny rules)"
                return Decision("deny", reason, None, "mode")
            return Decision("allow", "allowed by the permission mode `bypass`", None, "mode")
        if self.mode == "deny-asks":
            return Decision(
                "deny", f"{NEEDS_APPROVAL} (permission mode `deny-asks`)", decision.rule, "mode"
            )
        if is_builtin(tool_name, tool) and tool_name in FILE_EDIT_TOOLS and subject is None:
            subject = self._subject(tool_name, arguments, tool)
        if (
            is_builtin(tool_name, tool)
            and tool_name in FILE_EDIT_TOOLS
            and subject is not None
            and subject.kind == "path"
            and subject.value is not None
        ):
            return Decision(
                "allow", "a file edit inside the workspace (permission mode `accept-edits`)",
                None, "mode",
            )  # fmt: skip
        return decision

    def session_rules_for(
        self, tool_name: str, arguments: Mapping[str, Any], tool: ToolLike | None
    ) -> tuple[str, ...]:
        """The rules that "allow for the rest of the session" would add so that this
        exact call is allowed: one per bash command not yet allowed, the exact path
        for a file tool, the bare name otherwise. Empty when no rule can allow the
        call (a bash line with a problem, a path that does not resolve)."""
        source = tool.source if tool is not None else "builtin"
        subject = self._subject(tool_name, arguments, tool)
        if subject.kind is None or source.startswith("mcp:"):
            return (tool_name,)
        if subject.unknown or subject.value is None:
            return ()
        if subject.kind == "command":
            assert subject.line is not None
            if not subject.line.allowable or not subject.line.commands:
                return ()
            allows = self._applicable(tool_name, source, ("allow",))
            missing = [
                c for c in subject.line.commands if not any(r.covers_command(c) for r in allows)
            ]
            if any(not c.literal for c in missing):
                return ()  # `$x` or a glob: no rule names exactly this call
            return tuple(
                dict.fromkeys(
                    f"{tool_name}({' '.join(quote_word(w) for w in c.words)})" for c in missing
                )
            )
        if subject.kind == "tree":
            inside = "**" if subject.value == "." else escape_path(subject.value) + "/**"
            return (f"{tool_name}({inside})",)
        return (f"{tool_name}({escape_path(subject.value)})",)

    def _applicable(
        self, tool_name: str, source: str, verdicts: Iterable[Verdict]
    ) -> list[CompiledRule]:
        wanted = set(verdicts)
        return [r for r in self._naming(tool_name, source) if r.verdict in wanted]

    def _naming(self, tool_name: str, source: str) -> list[CompiledRule]:
        key = (tool_name, source)
        found = self._by_tool.get(key)
        if found is None:
            if len(self._by_tool) > 4096:
                self._by_tool.clear()
            found = self._by_tool[key] = [r for r in self.rules if r.names(tool_name, source)]
        return found

    def _subject(
        self, tool_name: str, arguments: Mapping[str, Any], tool: ToolLike | None
    ) -> Subject:
        """The call's main argument; the workspace's real path is resolved once (it is
        fixed when the agent is built)."""
        if not self._root:
            try:
                self._root.append(workspace_root(self.workspace))
            except ToolError:
                return subject_of(tool_name, arguments, tool, self.workspace)
        return subject_of(tool_name, arguments, tool, self.workspace, self._root[0])

    def _matcher(self, tool_name: str, source: str, verdict: Verdict) -> CommandIndex:
        key = (tool_name, source, verdict)
        found = self._matchers.get(key)
        if found is None:
            if len(self._matchers) > 4096:
                self._matchers.clear()
            rules = [r for r in self._naming(tool_name, source) if r.verdict == verdict]
            found = self._matchers[key] = CommandIndex(rules)
        return found

    def _possible_hit(
        self, tool_name: str, source: str, line: CommandLine, verdicts: tuple[Verdict, ...]
    ) -> str:
        """Why a rule of these verdicts could match a command whose value is partly
        known only when it runs (`rm $x` against `bash(rm -rf *)`), "" when none can."""
        for verdict in verdicts:
            matcher = self._matcher(tool_name, source, verdict)
            texts = [v for c in line.commands if not c.literal for v in c.deny_views]
            found = matcher.possible(texts) if texts else None
            if found is not None:
                return (
                    f"`{matcher.rules[found].text}` may match once the line's expansions are known"
                )
        return ""

    def _unchecked_deny(
        self, tool_name: str, tool: ToolLike | None, subject: Subject | None
    ) -> str:
        """Why this call cannot be checked against the tool's deny patterns ("" when it
        can, or when there are none)."""
        source = tool.source if tool is not None else "builtin"
        denies = [
            r for r in self._naming(tool_name, source)
            if r.verdict == "deny" and r.rule.pattern is not None
        ]  # fmt: skip
        if not denies or subject is None:
            return ""
        unchecked = _unchecked(subject)
        if not unchecked and subject.line is not None:
            unchecked = self._possible_hit(tool_name, source, subject.line, ("deny",))
        if not unchecked:
            return ""
        return f"cannot be checked against {_shown(denies)}: {unchecked}"

    def _groups(self, tool_name: str, source: str) -> _Groups:
        """The tool's rules sorted once for `_by_rules`, so a decision does not walk
        every rule again (10,000 rules: see bench_permissions.py)."""
        key = (tool_name, source)
        found = self._grouped.get(key)
        if found is None:
            if len(self._grouped) > 4096:
                self._grouped.clear()
            rules = self._naming(tool_name, source)
            allows = [r for r in rules if r.verdict == "allow"]
            found = self._grouped[key] = _Groups(
                patterned=any(r.rule.pattern is not None for r in rules),
                guards=[r for r in rules if r.verdict != "allow" and r.rule.pattern is not None],
                allows=allows,
                bare_allow=any(r.rule.pattern is None for r in allows),
            )
        return found

    def _by_rules(
        self, tool_name: str, arguments: Mapping[str, Any], tool: ToolLike | None
    ) -> tuple[Decision, Subject | None]:
        source = tool.source if tool is not None else "builtin"
        rules = self._naming(tool_name, source)
        groups = self._groups(tool_name, source)
        subject: Subject | None = None
        if groups.patterned:
            subject = self._subject(tool_name, arguments, tool)
        line = subject.line if subject is not None and subject.kind == "command" else None
        for verdict in ("deny", "ask"):
            if line is not None:
                matcher = self._matcher(tool_name, source, verdict)
                hit = matcher.bare or _first_hit(matcher, line)
            else:
                hit = next(
                    (
                        r
                        for r in rules
                        if r.verdict == verdict
                        and (r.rule.pattern is None or (subject is not None and r.hits(subject)))
                    ),
                    None,
                )
            if hit is not None:
                word = "denied by" if verdict == "deny" else "needs approval under"
                return Decision(verdict, f"{word} the rule `{hit.text}`", hit.text), subject
        guards, allows = groups.guards, groups.allows
        unchecked = _unchecked(subject) if guards and subject is not None else ""
        if guards and not unchecked and line is not None:
            unchecked = self._possible_hit(tool_name, source, line, ("deny", "ask"))
        if line is not None and not groups.bare_allow:
            allowed_by = _commands_allowed_by(self._matcher(tool_name, source, "allow"), line)
        else:
            allowed_by = _allowed_by(allows, subject)
        if unchecked and (allowed_by is not None or self.default == "allow"):
            reason = f"cannot be checked against {_shown(guards)}: {unchecked}"
            return Decision("ask", reason, None, "rule"), subject
        if allowed_by is not None:
            session = all(r.session for r in allowed_by)
            text = ", ".join(dict.fromkeys(r.text for r in allowed_by))
            return Decision(
                "allow", f"allowed by `{text}`", text, "session" if session else "rule"
            ), subject
        reason = f"no rule matches; the default is {self.default}"
        if self.default == "deny":
            reason = "no allow rule matches and the default is deny"
        if line is not None and allows and not line.allowable:
            reason = f"no rule can allow this line ({_line_problems(line)}); the default is {self.default}"
        return Decision(self.default, reason, None, "default"), subject


@dataclass(frozen=True)
class _Groups:
    patterned: bool
    guards: list[CompiledRule]
    allows: list[CompiledRule]
    bare_allow: bool


def _shown(rules: list[CompiledRule]) -> str:
    shown = ", ".join(f"`{r.text}`" for r in rules[:3])
    return shown + (f" and {len(rules) - 3} more" if len(rules) > 3 else "")


def _first_hit(matcher: CommandIndex, line: CommandLine) -> CompiledRule | None:
    """The first rule (in list order) matching any simple command of the line."""
    found = matcher.first(view for c in line.commands for view in c.deny_views)
    return None if found is None else matcher.rules[found]


def _commands_allowed_by(matcher: CommandIndex, line: CommandLine) -> list[CompiledRule] | None:
    """The allow rules covering every simple command of an understood line, or None."""
    if not line.allowable or not line.commands:
        return None
    used: list[CompiledRule] = []
    for command in line.commands:
        found = matcher.first(command.allow_views)
        if found is None:
            return None
        used.append(matcher.rules[found])
    return used


def _allowed_by(allows: list[CompiledRule], subject: Subject | None) -> list[CompiledRule] | None:
    """The allow rules that together cover the call, or None."""
    bare = [r for r in allows if r.rule.pattern is None]
    if bare:
        return bare[:1]
    if subject is None or subject.unknown:
        return None
    return next(([r] for r in allows if r.covers(subject)), None)


def _line_problems(line: CommandLine) -> str:
    problems = [*line.problems, *(c.problem for c in line.commands)]
    return "; ".join(list(dict.fromkeys(p for p in problems if p))[:3])


def _unchecked(subject: Subject) -> str:
    """Why some of the call could not be checked against deny/ask patterns."""
    if subject.unknown:
        return subject.unknown
    if subject.line is not None and subject.line.hidden:
        problems = [*subject.line.problems, *(c.problem for c in subject.line.commands)]
        reasons = "; ".join(dict.fromkeys(p for p in problems if p)) or "part of it runs unseen"
        return f"part of the command is not visible to the parser ({reasons})"
    return ""


def _mode(mode: str) -> PermissionMode:
    for known in PERMISSION_MODES:
        if mode == known:
            return known
    raise PermissionRuleError(
        f"unknown permission mode `{mode}`; use one of {', '.join(PERMISSION_MODES)}"
    )
