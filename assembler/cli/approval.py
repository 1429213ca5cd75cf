"""Asking the person at the terminal about a tool call an `ask` rule holds back.

The call is shown whole: every argument, every line, nothing cut (`call_text`; a
model wrote it, so it is made terminal-safe). A call longer than the terminal is
shown a page at a time, and the question is asked only after the last page: Enter
shows the next page, `n [reason]` refuses at once, anything else pages on (a `y`
typed before the whole call was seen allows nothing). Then the choices: `y` allows
it once, `a` allows the exact rule shown for the rest of the session (offered only
when the policy has such a rule: `ApprovalRequest.session_rules`), `n` refuses, and
`n <reason>` refuses with a reason the model reads. An empty answer refuses;
anything else asks again. Ctrl-C cancels the whole turn (the session's doing: the
question is awaited inside the turn).
"""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable

import click

from assembler.permissions.call_text import call_text
from assembler.permissions.gate import Approval, ApprovalRequest
from assembler.text import terminal_safe

Ask = Callable[[str], Awaitable[str]]
"""Shows a question and returns the next line the person types."""


def describe_call(request: ApprovalRequest) -> str:
    """The whole call, every line (`bash: git push`; see `call_text`)."""
    return call_text(request.call)


def choices(request: ApprovalRequest) -> str:
    rules = ", ".join(f"`{rule}`" for rule in request.session_rules)
    always = f"  [a] allow {rules} for this session" if rules else ""
    return f"[y] allow once{always}  [n] deny (n <reason> tells the model why)"


def parse_answer(text: str, request: ApprovalRequest) -> Approval | None:
    """The approval `text` gives, or None when it is not an answer (ask again)."""
    word, _, rest = text.strip().partition(" ")
    word = word.lower().rstrip(":,")
    if word in ("y", "yes"):
        return Approval("once")
    if word in ("a", "always") and request.session_rules:
        return Approval("session")
    if word in ("", "n", "no"):
        return Approval("deny", rest.strip())
    return None


def page_height() -> int:
    """Lines of the call shown at once: the terminal's height, less room for the
    reason, the choices and the prompt."""
    return max(5, shutil.get_terminal_size().lines - 5)


def screen_rows(text: str) -> list[str]:
    """`text` as the rows a terminal shows: each line cut where the terminal would
    wrap it (after the two-column margin), so a page is a screenful even when one
    line is thousands of characters long."""
    width = max(20, shutil.get_terminal_size().columns - 2)
    rows: list[str] = []
    for line in text.split("\n"):
        rows.extend(line[i : i + width] for i in range(0, len(line), width))
        if not line:
            rows.append("")
    return rows


class ConsoleApprover:
    """An `Approver` for `Agent.set_approver` that asks through `ask`."""

    def __init__(self, ask: Ask) -> None:
        self.ask = ask

    async def __call__(self, request: ApprovalRequest) -> Approval:
        click.echo(err=True)
        lines = screen_rows(terminal_safe(describe_call(request)))
        height = page_height()
        for start in range(0, len(lines), height):
            page = lines[start : start + height]
            for number, line in enumerate(page, start):
                click.secho(("? " if number == 0 else "  ") + line, err=True, fg="yellow")
            if start + height < len(lines):
                refused = await self._more(start + len(page), len(lines))
                if refused is not None:
                    click.secho("denied", err=True, dim=True)
                    return refused
        click.secho(terminal_safe(f"  {request.decision.reason}"), err=True, dim=True)
        click.echo(terminal_safe(f"  {choices(request)}"), err=True)
        question = "allow? [y/a/N] " if request.session_rules else "allow? [y/N] "
        while True:
            answer = parse_answer(await self.ask(question), request)
            if answer is not None:
                shown = {"once": "allowed once", "session": "allowed for this session"}
                click.secho(shown.get(answer.choice, "denied"), err=True, dim=True)
                return answer
            hint = "y, a, n or n <reason>" if request.session_rules else "y, n or n <reason>"
            click.echo(f"answer {hint}", err=True)

    async def _more(self, shown: int, total: int) -> Approval | None:
        """Between pages: a deny when `n [reason]` was typed, else None (page on)."""
        typed = await self.ask(
            f"-- {shown} of {total} lines shown: Enter for more, n [reason] to deny -- "
        )
        word, _, rest = typed.strip().partition(" ")
        if word.lower().rstrip(":,") in ("n", "no"):
            return Approval("deny", rest.strip())
        return None
