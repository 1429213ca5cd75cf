"""`assemble run`: one prompt to completion (`-p`), or an interactive session
(`cli/interactive.py`); a new session, or one continued (`cli/resume.py`)."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

import click

from assembler.cli.common import (
    EXIT_BUDGET,
    agent_options,
    ask_trust,
    budget_limits,
    budget_options,
    build_options,
    echo_new_issues,
    enter_workspace,
    load_reporting,
    loader_flags,
    manifest_argument,
)
from assembler.cli.params import given_params, param_options
from assembler.cli.resume import (
    SessionRequest,
    choose_session,
    session_model,
    session_options,
    terminal_can_ask,
)
from assembler.errors import UsageError

if TYPE_CHECKING:
    from assembler.agent.agent import Agent
    from assembler.permissions.policy import PermissionMode
    from assembler.runner.events import RunEnd

OUTPUT_INVALID = "output_invalid"  # as `runner.answer.OUTPUT_INVALID` (not imported: start-up)
EXIT_OUTPUT_INVALID = 4  # 3 is a budget stop (EXIT_BUDGET)
"""The exit code of a run whose typed answer stayed invalid after every retry, so a
pipeline tells "the agent could not answer in shape" from other failures (1)."""

MAX_PIPED_BYTES = 16 * 1024 * 1024
"""The most a prompt may take from stdin: more is beyond any model's context."""


@click.command(
    epilog="\b\nExample:\n"
    '  assemble run agents/team/reviewer.yaml -p "review the last commit"\n'
    '  git diff | assemble run agents/team/reviewer.yaml -p "review this diff"\n'
    "  assemble run agents/team/reviewer.yaml --continue"
)
@click.argument("manifest", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "-p",
    "--prompt",
    "prompt",
    help="Run this prompt to completion, print the answer and exit. Piped stdin is "
    "appended to it; `-p -` reads the whole prompt from stdin.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the event stream as JSON lines.")
@param_options
@click.option(
    "--output-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the typed answer (an agent with `output:`) to this file as JSON.",
)
@click.option(
    "--max-turns", type=click.IntRange(min=1), help="Model requests per prompt before stopping."
)
@click.option(
    "--hide-reasoning", is_flag=True, help="Do not show the model's reasoning (shown dimmed)."
)
@budget_options
@session_options
@agent_options
def run(
    manifest: Path | None,
    prompt: str | None,
    as_json: bool,
    model: str | None,
    max_turns: int | None,
    session_dir: Path | None,
    no_session: bool,
    trust: bool,
    continue_: bool,
    resume: str | None,
    fork: str | None,
    permission_mode: PermissionMode,
    param_pairs: tuple[str, ...],
    params_file: str | None,
    output_file: Path | None,
    budget_usd: float | None,
    budget_tokens: int | None,
    hide_reasoning: bool,
    **resources: Any,
) -> None:
    """Run MANIFEST's agent (default: ./agent.yaml) on a prompt (-p), or interactively.

    Interactive: type a message; a line typed while the agent works steers it, /help
    lists the commands, Ctrl-C cancels the current turn, /exit (or Ctrl-D) leaves.
    Tool calls and results are shown on stderr. --continue and --resume go on with an
    earlier session; `assemble sessions list` shows them.

    A manifest with `task:` runs its task without -p, with the values of its
    `parameters` given by --param/--params. With `output:`, -p prints the typed answer
    as one line of JSON on stdout (and nothing else).

    With -p (or a task), the exit code is 0 when the run completed, 3 when a budget
    stopped it (limits.budget, --budget-usd, --budget-tokens), 4 when it ended without
    a valid typed answer, and 1 otherwise.
    """
    from assembler.agent.build import build_agent
    from assembler.cli.turns import banner
    from assembler.tools.processes import install_exit_handlers

    install_exit_handlers()  # SIGTERM/SIGHUP/exit stop every running tool process
    manifest = manifest_argument(manifest)
    request = SessionRequest.from_options(continue_, resume, fork)
    if params_file == "-" and prompt is not None:
        raise click.UsageError("--params - reads stdin, which -p reads too: give a file")
    if prompt is not None:
        prompt = _prompt_with_stdin(prompt, sys.stdin)
    output_file = output_file.resolve() if output_file is not None else None
    flags = loader_flags(resources)
    shown = load_reporting(manifest, flags)
    # every problem with the values at once, before anything is built or asked
    params = given_params(shown.manifest, param_pairs, params_file)
    one_shot = prompt is not None or shown.manifest.task is not None
    if output_file is not None and (shown.manifest.output is None or not one_shot):
        raise click.UsageError("--output-file needs an agent with `output:` run on one task or -p")
    session_dir = enter_workspace(shown.manifest, session_dir)
    session, fork_entry = choose_session(
        request, shown.manifest, session_dir, record=not no_session, can_ask=terminal_can_ask()
    )
    model = session_model(model, session, fork_entry)  # the model a `/model` chose
    options = replace(
        build_options(
            flags, model=model, session_dir=session_dir, no_session=no_session, trust=trust
        ),
        ask_trust=ask_trust,
        session=session,
        fork=fork_entry,
        permission_mode=permission_mode,
        params=params,
        budget=budget_limits(budget_usd, budget_tokens),
    )
    agent = build_agent(shown.manifest, options)
    banner(agent, quiet=as_json, resumed=request.wanted)
    if not as_json:  # the build's diagnostics now, each once (JSON keeps them as events)
        echo_new_issues(agent.parts.pending_diagnostics(), shown.issues, manifest)
    if one_shot:
        end = asyncio.run(_one_shot(agent, prompt, as_json, max_turns, hide_reasoning))
        if end is not None and end.typed and output_file is not None and end.output is not None:
            write_output(output_file, end.output)
        if end is not None and end.reason == "budget":
            sys.exit(EXIT_BUDGET)
        if end is None or end.reason != "completed":
            sys.exit(EXIT_OUTPUT_INVALID if end and end.reason == OUTPUT_INVALID else 1)
        return
    code = _interactive(agent, as_json, max_turns, hide_reasoning)
    if code:
        sys.exit(code)


async def _one_shot(
    agent: Agent,
    prompt: str | None,
    as_json: bool,
    max_turns: int | None,
    hide_reasoning: bool,
) -> RunEnd | None:
    """`-p` (or the manifest's task): nobody can answer an `ask` (it is a deny the
    model reads) unless `--permission-mode` decides asks. The run's end event."""
    from assembler.cli.turns import drive, session_note

    ends: list[RunEnd] = []
    try:
        await drive(
            agent,
            prompt,
            as_json,
            max_turns,
            answer_only=True,
            ends=ends,
            hide_reasoning=hide_reasoning,
        )
        return ends[-1] if ends else None
    finally:
        await agent.aclose()
        session_note(agent, as_json)


def _interactive(agent: Agent, as_json: bool, max_turns: int | None, hide_reasoning: bool) -> int:
    from assembler.cli.interactive import Interactive, run_session

    terminal = _is_terminal(sys.stdin)
    session = Interactive(
        agent,
        as_json=as_json,
        max_turns=max_turns,
        terminal=terminal,
        approvals=terminal and not as_json and _is_terminal(sys.stderr),
        hide_reasoning=hide_reasoning,
    )
    return run_session(session)


def _prompt_with_stdin(prompt: str, stdin: TextIO) -> str:
    """`-p -`: the prompt is all of stdin. `-p TEXT` with stdin a pipe or a file: TEXT,
    a blank line, then what was piped (`cat log.txt | assemble run a.yaml -p explain`).
    A terminal, /dev/null or no stdin at all add nothing. An empty prompt is refused,
    as RPC refuses one: the model would be asked about nothing."""
    if prompt == "-":
        text = _read_all(stdin)
        if text is None or not text.strip():
            raise UsageError("`-p -` reads the prompt from stdin, and stdin was empty")
        return text
    piped = _read_all(stdin) if _is_piped(stdin) else None
    if piped and piped.strip():
        return f"{prompt}\n\n{piped}" if prompt.strip() else piped
    if not prompt.strip():
        raise click.UsageError("-p needs a prompt: the text was empty (`-p -` reads stdin)")
    return prompt


def _is_piped(stream: TextIO) -> bool:
    """Stdin is a pipe, a socket or a regular file (not a terminal, not /dev/null)."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (AttributeError, OSError, ValueError):  # closed, or not a real file
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)


def _read_all(stream: TextIO) -> str | None:
    """All of `stream` as text (invalid UTF-8 replaced); None when it cannot be read."""
    raw: BinaryIO | None = getattr(stream, "buffer", None)
    try:
        data = raw.read(MAX_PIPED_BYTES + 1) if raw is not None else None
        if data is None:
            text = stream.read(MAX_PIPED_BYTES + 1)
            data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else b""
    except (OSError, ValueError):
        return None
    if len(data) > MAX_PIPED_BYTES:
        raise UsageError(
            f"stdin holds more than {MAX_PIPED_BYTES // (1024 * 1024)} MiB, more than any "
            "model's context: pipe a part of it (head, tail, grep)"
        )
    return data.decode("utf-8", "replace")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def write_output(file: Path, output: Any) -> None:
    """`--output-file`: the typed answer as JSON, replaced whole."""
    import json

    from assembler.files import atomic_write

    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(output, ensure_ascii=False, indent=2) + "\n"
        atomic_write(file, text.encode("utf-8"))
    except OSError as e:
        raise UsageError(f"cannot write the output to {file}: {e.strerror or e}") from e
