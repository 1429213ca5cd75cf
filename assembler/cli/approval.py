"""Asking the person at the terminal about a tool call an `ask` rule holds back.

The call is shown (tool, arguments shortened: a model wrote them, so they are made
terminal-safe), then the choices: `y` allows it once, `a` allows the exact rule shown
for the rest of the session (offered only when the policy has such a rule:
`ApprovalRequest.session_rules`), `n` refuses, and `n <reason>` refuses with a reason
the model reads. An empty answer refuses; anything else asks again. Ctrl-C cancels
the whole turn (the session's doing: the question is awaited inside the turn).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import click

from assembler.permissions.gate import Approval, ApprovalRequest
from assembler.text import one_line, terminal_safe

Ask = Callable[[str], Awaitable[str]]
"""Shows a question and returns the next line the person types."""


def describe_call(request: ApprovalRequest) -> str:
    """`bash: git push origin main`, `edit: {"path": ..., ...}` (shortened)."""
    arguments = request.call.arguments
    if arguments is None:
        shown = request.call.raw_arguments
    elif len(arguments) == 1:
        shown = str(next(iter(arguments.values())))
    else:
        shown = json.dumps(arguments, ensure_ascii=False)
    return f"{request.call.name}: {one_line(shown, 200)}"


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


class ConsoleApprover:
    """An `Approver` for `Agent.set_approver` that asks through `ask`."""

    def __init__(self, ask: Ask) -> None:
        self.ask = ask

    async def __call__(self, request: ApprovalRequest) -> Approval:
        click.echo(err=True)
        click.secho(terminal_safe(f"? {describe_call(request)}"), err=True, fg="yellow")
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
