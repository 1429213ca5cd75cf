"""Options and helpers shared by the commands that build an agent."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from assembler.budgets import BudgetLimits
from assembler.errors import Issue, UsageError
from assembler.manifest.model import Manifest
from assembler.resources.loader import LoaderFlags
from assembler.text import terminal_safe

if TYPE_CHECKING:
    from assembler.agent.options import BuildOptions

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Loaded:
    """A manifest that validated, and the warnings that were printed for it."""

    manifest: Manifest
    issues: tuple[Issue, ...] = ()


DEFAULT_MANIFEST = Path("agent.yaml")
"""What `run`, `render` and `validate` use when no manifest is named (where `init` puts it)."""


def manifest_argument(given: Path | None) -> Path:
    """The manifest named on the command line, else `./agent.yaml` when there is one."""
    if given is not None:
        return given
    if DEFAULT_MANIFEST.is_file():
        return DEFAULT_MANIFEST
    raise click.UsageError(
        f"missing MANIFEST: name one, or run where an {DEFAULT_MANIFEST} is "
        "(`assemble init` writes one)"
    )


def resource_options(function: F) -> F:
    """`--no-skills`, `--no-context-files`, `--no-prompt-templates`,
    `--no-extensions` and `--skill PATH`: each switches its own source only."""
    options = [
        click.option(
            "--no-skills", is_flag=True, help="Load no skills from the manifest's directories."
        ),
        click.option("--no-context-files", is_flag=True, help="Read no project context files."),
        click.option(
            "--no-prompt-templates", is_flag=True, help="Ignore the manifest's template overrides."
        ),
        click.option("--no-extensions", is_flag=True, help="Load no extensions."),
        click.option(
            "--skill",
            "skills",
            multiple=True,
            type=click.Path(path_type=Path, exists=True),
            help="Load this skill folder too (even with --no-skills). Repeatable.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def agent_options(function: F) -> F:
    """The options of every command that builds a runnable agent (`run`, `rpc`)."""
    options = [
        click.option("--model", help="Use this model instead of the manifest's: provider:name."),
        click.option(
            "--session-dir",
            type=click.Path(path_type=Path, file_okay=False),
            help="Where session files go.",
        ),
        click.option("--no-session", is_flag=True, help="Do not record a session file."),
        click.option("--trust", is_flag=True, help="Trust the manifest's directory for this run."),
    ]
    for option in reversed(options):
        function = option(function)
    return resource_options(function)


EXIT_BUDGET = 3
"""The exit code of a run stopped by a budget: the work is unfinished, but nothing
failed (errors exit 1, usage errors 2)."""


def budget_options(function: F) -> F:
    """`--budget-usd` and `--budget-tokens`: override the manifest's `limits.budget`."""
    options = [
        click.option(
            "--budget-usd",
            type=click.FloatRange(min=0, min_open=True),
            help="Stop before spending more than this many US dollars (overrides "
            "limits.budget.cost_usd).",
        ),
        click.option(
            "--budget-tokens",
            type=click.IntRange(min=1),
            help="Stop before using more than this many tokens, input and output (overrides "
            "limits.budget.tokens).",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def budget_limits(usd: float | None, tokens: int | None) -> BudgetLimits | None:
    """What `--budget-usd` and `--budget-tokens` set (None: neither)."""
    limits = BudgetLimits(cost_usd=usd, tokens=tokens)
    return limits if limits else None


def build_options(
    flags: LoaderFlags,
    *,
    model: str | None,
    session_dir: Path | None,
    no_session: bool,
    trust: bool,
) -> BuildOptions:
    """What `agent_options` asked for, as `build_agent` takes it (a command adds its
    own fields with `dataclasses.replace`): `--trust` trusts the directory for this
    run; without it the trust store decides."""
    # imported here: only the commands that build an agent need it, not `validate`
    # or `render --dry-run` (start-up cost)
    from assembler.agent.options import BuildOptions

    return BuildOptions(
        model=model,
        flags=flags,
        session_dir=session_dir,
        record_session=not no_session,
        trust=True if trust else None,
    )


def loader_flags(params: dict[str, Any]) -> LoaderFlags:
    return LoaderFlags(
        no_skills=bool(params.get("no_skills")),
        no_context_files=bool(params.get("no_context_files")),
        no_prompt_templates=bool(params.get("no_prompt_templates")),
        no_extensions=bool(params.get("no_extensions")),
        explicit_skills=tuple(Path(p).resolve() for p in params.get("skills", ())),
    )


def load(manifest: Path, flags: LoaderFlags) -> Manifest:
    """Load with the same checks and messages as `assemble validate`; warnings go to
    stderr, errors raise (and the CLI prints them once, in `main`)."""
    return load_reporting(manifest, flags).manifest


def load_reporting(manifest: Path, flags: LoaderFlags, *, unset_variables: str = "error") -> Loaded:
    """`load`, also returning the warnings it printed, so a caller does not print them
    twice; `unset_variables="warning"` for a dry run, which needs no secrets."""
    from assembler.errors import ManifestError
    from assembler.validation.validator import validate_file

    report = validate_file(
        manifest,
        unset_variables=unset_variables,
        explicit_skills=flags.explicit_skills,
        skill_errors="warning",  # a broken skill is left out, as the resource loader does
    )
    if report.has_errors or report.manifest is None:
        raise ManifestError(report.issues)
    for issue in report.issues:
        click.echo(terminal_safe(issue.format()), err=True)
    return Loaded(report.manifest, report.issues)


def echo_new_issues(issues: Iterable[Issue], already: Iterable[Issue], manifest: Path) -> None:
    """Print on stderr each of `issues` not printed yet: validation reported some with
    paths relative to the current directory, the build the same with absolute ones;
    two of the same severity at the same place in a file (a manifest entry) are one
    problem that validation and the build each saw, in their own words. An issue about
    no file in particular (a tool clash) is about the manifest, and is shown with its
    path rather than `<manifest>`."""

    def keys(issue: Issue) -> set[tuple[str, int, int, str, str]]:
        file = os.path.abspath(issue.file) if issue.file else ""
        found: set[tuple[str, int, int, str, str]] = {
            (file, issue.line, issue.column, issue.severity, issue.message)
        }
        if issue.line:
            found.add((file, issue.line, issue.column, issue.severity, ""))
        return found

    seen = {key for issue in already for key in keys(issue)}
    for issue in issues:
        if not keys(issue) & seen:
            seen |= keys(issue)
            shown = issue if issue.file else dataclasses.replace(issue, file=str(manifest))
            click.echo(shown.format(), err=True)


def enter_workspace(manifest: Manifest, session_dir: Path | None) -> Path | None:
    """Make the agent's workspace the current directory, as other coding agents do, so
    a Python tool or an extension that uses relative paths works where `read` and
    `bash` do, whatever directory `assemble` was started from. Paths from the command
    line are resolved first; the session directory is returned resolved."""
    resolved = session_dir.resolve() if session_dir is not None else None
    try:
        os.chdir(manifest.workspace.resolve())
    except OSError as e:
        raise UsageError(f"cannot enter the workspace {manifest.workspace}: {e.strerror}") from e
    return resolved


def ask_trust(directory: Path, code: list[str]) -> bool:
    """Ask on the terminal whether to trust `directory`; remember a yes."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    # what the question lists comes from the manifest: shown, never obeyed, so an
    # escape sequence cannot hide a command from the person asked
    click.echo(terminal_safe(f"This agent would run code from {directory}:"), err=True)
    for item in code:
        click.echo(terminal_safe(f"  - {item}"), err=True)
    if not click.confirm(
        "Trust this directory (remembered in your config)?", default=False, err=True
    ):
        return False
    from assembler.trust import TrustStore

    TrustStore().add(directory)
    return True
