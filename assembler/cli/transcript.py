"""A session file as people read it: `assemble sessions show` (text or Markdown).

The transcript follows the branch that ends at the last entry written, which is the
conversation as it went on; what other branches hold (a fork in place, a retry) is
counted in the heading. User and assistant text is shown whole; tool calls and
results are one line each, cut; a compaction, a run's end and a sub-agent's session
(linked both ways: the parent's `subagent` entries, the child's `delegated_from`
header) each get a line of their own. Entry ids are shown with each turn, since
`assemble run --resume ID --fork ENTRY` takes them.

Nothing here escapes text for a terminal: the command does, only on a terminal, so a
pipe or a file gets the session's text unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from assembler.sessions.records import Entry
from assembler.sessions.store import Session
from assembler.text import one_line

TOOL_PREVIEW = 160


def heading_lines(session: Session, branch: Sequence[Entry], total: int) -> list[str]:
    """What the session is: id, agent, model, file, workspace, where it came from."""
    header = session.header
    lines = [
        f"session {session.id}",
        f"agent: {header.get('agent', '')}   model: {header.get('model', '')}",
        f"file: {session.path}",
    ]
    if header.get("workspace"):
        lines.append(f"workspace: {header['workspace']}")
    last = branch[-1].time if branch else ""
    lines.append(f"started: {header.get('created', '')}   last activity: {last or '-'}")
    if header.get("parent_session"):
        lines.append(
            f"forked from session {header['parent_session']} at entry {header.get('forked_from')}"
        )
    link = header.get("delegated_from")
    if isinstance(link, Mapping):
        lines.append(
            f"delegated from session {link.get('session')} (tool `{link.get('tool')}`, "
            f"call {link.get('call_id')}, entry {link.get('entry')}): {link.get('session_file')}"
        )
    others = total - len(branch)
    if others > 0:
        lines.append(f"({others} entries on other branches are not shown)")
    if session.skipped:
        lines.append(f"({session.skipped} unreadable lines skipped)")
    return lines


def text_transcript(session: Session) -> str:
    """The transcript as plain text."""
    entries = session.entries()
    branch = session.branch() if entries else []
    out = heading_lines(session, branch, len(entries))
    for entry in branch:
        out += _text_entry(entry)
    return "\n".join(out) + "\n"


def markdown_transcript(session: Session) -> str:
    """The transcript as Markdown: a heading per turn, tool activity as list items."""
    entries = session.entries()
    branch = session.branch() if entries else []
    out = [f"# Session `{session.id}`", ""]
    out += [f"- {line}" for line in heading_lines(session, branch, len(entries))[1:]]
    for entry in branch:
        out += _markdown_entry(entry)
    return "\n".join(out).rstrip("\n") + "\n"


def json_transcript(session: Session) -> dict[str, Any]:
    """Everything in the file: the header, every entry in file order, and the ids of
    the branch the text transcript follows."""
    entries = session.entries()
    branch = session.branch() if entries else []
    return {
        "header": dict(session.header),
        "entries": [entry.to_record() for entry in entries],
        "branch": [entry.id for entry in branch],
        "skipped": session.skipped,
    }


# -- one entry -----------------------------------------------------------------------


def _message(entry: Entry) -> Mapping[str, Any] | None:
    message = entry.payload.get("message")
    return message if entry.type == "message" and isinstance(message, Mapping) else None


def _call_line(call: object) -> str:
    if not isinstance(call, Mapping):
        return "?"
    arguments = call.get("arguments")
    if isinstance(arguments, Mapping) and len(arguments) == 1:
        shown = str(next(iter(arguments.values())))
    elif arguments is None:
        shown = str(call.get("raw_arguments", ""))
    else:
        shown = json.dumps(arguments, ensure_ascii=False)
    return f"{call.get('name')} {one_line(shown, TOOL_PREVIEW)}"


def _result_line(message: Mapping[str, Any]) -> str:
    content = str(message.get("content", ""))
    status = "error" if message.get("is_error") else "ok"
    count = content.count("\n") + 1 if content else 0
    return f"{message.get('name')} {status} ({count} lines) {one_line(content, TOOL_PREVIEW)}"


def _usage(payload: Mapping[str, Any]) -> str:
    usage = payload.get("usage")
    if not isinstance(usage, Mapping) or not any(usage.values()):
        return ""  # a replay reports none
    return f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out tokens"


def _other(entry: Entry) -> str | None:
    """The line of an entry that is not a message (None: not shown)."""
    payload = entry.payload
    if entry.type == "compaction":
        return (
            f"── compaction ({payload.get('reason') or 'manual'}, "
            f"{payload.get('tokens_before', 0)} tokens before; kept from entry "
            f"{payload.get('first_kept')}): {one_line(str(payload.get('summary', '')), 300)}"
        )
    if entry.type == "subagent":
        return (
            f"↳ sub-agent {payload.get('agent_path')} (tool `{payload.get('tool')}`, call "
            f"{payload.get('call_id')}): session {payload.get('session')}, "
            f"{payload.get('session_file')}"
        )
    if entry.type == "event":
        event = payload.get("event")
        if isinstance(event, Mapping) and event.get("type") == "run_end":
            tokens = _usage(event)
            message = f": {event.get('message')}" if event.get("message") else ""
            return f"· run {event.get('reason')}{message} ({event.get('turns', 0)} turns" + (
                f", {tokens})" if tokens else ")"
            )
        return None
    if entry.type == "message":
        return None
    return f"[{entry.type}] {one_line(json.dumps(dict(payload), ensure_ascii=False), 200)}"


def _text_entry(entry: Entry) -> list[str]:
    message = _message(entry)
    if message is None:
        line = _other(entry)
        return [] if line is None else [line]
    role = message.get("role")
    if role == "tool":
        return [f"  ← {_result_line(message)}"]
    if role == "context":
        return [f"[{entry.id}] context: {one_line(str(message.get('content', '')), 200)}"]
    if role == "assistant":
        lines = ["", f"assistant [{entry.id}]"]
        if message.get("text"):
            lines.append(str(message["text"]).rstrip("\n"))
        calls = message.get("tool_calls")
        lines += [f"  → {_call_line(c)}" for c in calls] if isinstance(calls, list) else []
        return lines
    return ["", f"you [{entry.id}]", str(message.get("content", "")).rstrip("\n")]


def _code(text: str) -> str:
    """`text` as a Markdown code span, whatever backquotes it holds."""
    if "`" not in text:
        return f"`{text}`"
    fence = "`" * (max(len(run) for run in re.findall("`+", text)) + 1)
    return f"{fence} {text} {fence}"


def _markdown_entry(entry: Entry) -> list[str]:
    message = _message(entry)
    if message is None:
        line = _other(entry)
        return [] if line is None else ["", f"> {line}"]
    role = message.get("role")
    if role == "tool":
        return [f"- ← {_code(_result_line(message))}"]
    if role == "context":
        return ["", f"*context* `{entry.id}`: {one_line(str(message.get('content', '')), 200)}"]
    if role == "assistant":
        lines = ["", f"## Assistant `{entry.id}`", ""]
        if message.get("text"):
            lines.append(str(message["text"]).rstrip("\n"))
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            lines += ["", *(f"- → {_code(_call_line(c))}" for c in calls)]
        return lines
    return ["", f"## You `{entry.id}`", "", str(message.get("content", "")).rstrip("\n")]


# -- the tree (`/tree`) ------------------------------------------------------------------


def tree_lines(session: Session) -> list[str]:
    """Every user and assistant message of the file as a tree: a branch point indents
    what follows it; `*` marks the branch the session is on, `← here` its leaf."""
    entries = session.entries()
    if not entries:
        return ["(no entries yet)"]
    on_branch = {entry.id for entry in session.branch()}
    children: dict[str | None, list[Entry]] = {}
    known: set[str] = set()
    for entry in entries:
        if entry.id not in known:
            known.add(entry.id)
            children.setdefault(entry.parent, []).append(entry)
    roots = [e for parent, kids in children.items() if parent is None or parent not in known
             for e in kids]  # fmt: skip
    lines: list[str] = []
    stack = [(entry, 0) for entry in reversed(roots)]
    while stack:  # depth first without recursion: a session is a chain thousands deep
        entry, depth = stack.pop()
        line = _tree_line(entry)
        if line is not None:
            mark = "*" if entry.id in on_branch else " "
            here = "  ← here" if entry.id == session.leaf else ""
            lines.append(f"{mark} {'  ' * depth}{entry.id} {line}{here}")
        kids = children.get(entry.id, [])
        inner = depth + 1 if len(kids) > 1 else depth
        stack.extend((kid, inner) for kid in reversed(kids))
    return lines


def _tree_line(entry: Entry) -> str | None:
    message = _message(entry)
    if entry.type == "compaction":
        return "── compaction"
    if message is None:
        return None
    if message.get("role") == "user":
        return f"you: {one_line(str(message.get('content', '')), 70)}"
    if message.get("role") == "assistant":
        calls = message.get("tool_calls")
        names = [str(c.get("name")) for c in calls if isinstance(c, Mapping)] if calls else []
        text = one_line(str(message.get("text", "")), 60)
        tools = f" [{', '.join(names)}]" if names else ""
        return f"assistant: {text}{tools}" if text or tools else "assistant: (empty)"
    return None


def turn_ends(session: Session) -> list[tuple[Entry, str]]:
    """The answers on the current branch (assistant messages that call no tool), each
    with the user message it answered: the places `/fork` offers."""
    found: list[tuple[Entry, str]] = []
    asked = ""
    for entry in session.branch() if session.entries() else []:
        message = _message(entry)
        if message is None:
            continue
        if message.get("role") == "user":
            asked = str(message.get("content", ""))
        elif message.get("role") == "assistant" and not message.get("tool_calls"):
            found.append((entry, asked))
    return found
