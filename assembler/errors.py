"""Every error a user can see, in one tree.

The CLI turns these into one readable message and an exit code in one place
(`assembler.cli.main`); nothing here logs or prints. Two branches say whose move it
is: a `UsageError` is the user's mistake (a manifest, a template, a context value, a
command line, an untrusted directory, a missing API key): fix the input and try
again. A `RunError` is a failure while an agent runs (the model endpoint, a tool, an
extension, an MCP server, a session or memory file): the input may be fine. Callers
catch one branch to tell "fix your manifest" from "the model endpoint is down".

    AssemblerError
    ├── UsageError: ManifestError, PromptContextError, TemplateError
    │               (TemplateSecurityError), PermissionRuleError, ParameterError, TrustError,
    │               SandboxError, MissingCredentialsError*, ConfigurationError*
    │               (UnknownProviderError*), MissingExtraError
    └── RunError:   ProviderError (ContextOverflowError), ToolError, ExtensionError,
                    MCPError, SessionError, MemoryStoreError, RenderError

    * also a ProviderError, so `except ProviderError` sees every provider problem.

The CLI exits 2 for a `ConfigurationError` (a usage error, as click's own are: the
model named cannot work, whatever the run) and 1 for every other error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Issue:
    """One problem found in a file: where it is, what it is, and how bad.

    `line` and `column` are 1-based, as editors and `file:line:col` links expect.
    `path` is the JSON path inside the manifest (`tools.sets[0].allow`), empty when
    the problem is about the file as a whole.
    """

    file: str = ""
    line: int = 0
    column: int = 0
    severity: Severity = "error"
    message: str = field(default="", compare=True)
    path: str = ""

    def location(self) -> str:
        """`file:line:col`, leaving out the parts that are unknown."""
        parts = [self.file or "<manifest>"]
        if self.line:
            parts.append(str(self.line))
            if self.column:
                parts.append(str(self.column))
        return ":".join(parts)

    def format(self) -> str:
        """The one-line form used by `assemble validate` and every error message."""
        suffix = f" [{self.path}]" if self.path else ""
        return f"{self.location()}: {self.severity}: {self.message}{suffix}"


class AssemblerError(Exception):
    """Base of every error agent-assembler raises on purpose."""


class UsageError(AssemblerError):
    """The user's mistake: fix the manifest, the command line or the setup, then retry."""


class RunError(AssemblerError):
    """A failure while an agent runs, from something other than the user's input."""


class ManifestError(UsageError):
    """A manifest (or a file it references) is invalid; carries every issue found."""

    def __init__(self, issues: Iterable[Issue]) -> None:
        self.issues: tuple[Issue, ...] = tuple(issues)
        super().__init__("\n".join(issue.format() for issue in self.issues))

    def __reduce__(self) -> tuple[type[ManifestError], tuple[tuple[Issue, ...]]]:
        return type(self), (self.issues,)  # pickled as made (a Dask worker's error)

    @property
    def errors(self) -> tuple[Issue, ...]:
        return tuple(issue for issue in self.issues if issue.severity == "error")


class PromptContextError(UsageError, ValueError):
    """A `context` value cannot be turned into canonical JSON; `path` says where."""

    def __init__(self, message: str, path: str = "$") -> None:
        self.reason = message
        self.path = path
        super().__init__(f"{message} at {path}")

    def __reduce__(self) -> tuple[type[PromptContextError], tuple[str, str]]:
        return type(self), (self.reason, self.path)


class TemplateError(UsageError):
    """A prompt section template does not parse, or uses a variable it is not given."""


class TemplateSecurityError(TemplateError):
    """A template tried to reach Python internals through the sandbox."""


class RenderError(RunError):
    """The system prompt could not be produced (a provider returned no text, ...)."""


class ProviderError(RunError):
    """A model provider failed: bad configuration, or an error from the endpoint."""


class ContextOverflowError(ProviderError):
    """The provider refused a request as too long for the model's context window.

    Raised instead of a plain `ProviderError` so a session can compact the history and
    retry. `prompt_tokens` and `context_window` are the figures the server reported,
    None when it gave none.
    """

    def __init__(
        self, message: str, *, prompt_tokens: int | None = None, context_window: int | None = None
    ) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.context_window = context_window


class ConfigurationError(ProviderError, UsageError):
    """The model setup cannot work as given, for any run: an invalid `provider:name`
    (`--model`, `ASSEMBLER_MODEL`, the user's config file), no model at all, bad
    provider options, a scripted provider without its script. A usage error: the CLI
    exits 2, and `assemble eval` reports it once, before any task runs."""


class UnknownProviderError(ConfigurationError, KeyError):
    """The manifest or `--model` names a provider that nobody registered."""

    def __str__(self) -> str:  # KeyError would quote the message otherwise
        return str(self.args[0]) if self.args else ""


class MissingCredentialsError(ProviderError, UsageError):
    """The provider needs an API key that the environment does not hold."""


class ToolError(RunError):
    """A tool refused or failed; its message is what the model is shown."""


class ExtensionError(RunError):
    """An extension failed to load or one of its handlers failed; names the extension."""


class PermissionRuleError(UsageError):
    """A permission rule (`bash(git diff *)`) is malformed; `offset` is where, in the rule."""

    def __init__(self, message: str, rule: str = "", offset: int = 0) -> None:
        self.reason = message
        self.rule = rule
        self.offset = offset
        super().__init__(f"permission rule {rule!r}: {message}" if rule else message)

    def __reduce__(self) -> tuple[type[PermissionRuleError], tuple[str, str, int]]:
        return type(self), (self.reason, self.rule, self.offset)


class ParameterError(UsageError):
    """Parameter values that do not fit the agent's `parameters`: every problem at once
    (unknown names, required ones missing, values that do not match), before any model
    call. `problems` holds one line each."""

    def __init__(self, problems: Iterable[str], agent: str = "") -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        self.agent = agent
        whose = f" of agent `{agent}`" if agent else ""
        count = len(self.problems)
        lines = "".join(f"\n  {problem}" for problem in self.problems)
        super().__init__(
            f"{count} problem{'' if count == 1 else 's'} with the parameters{whose}:{lines}"
        )

    def __reduce__(self) -> tuple[type[ParameterError], tuple[tuple[str, ...], str]]:
        return type(self), (self.problems, self.agent)


class MissingExtraError(UsageError):
    """An optional feature needs a package this install lacks; the message names the
    extra to install (`pip install 'agent-assembler[openai]'`)."""


class TrustError(UsageError):
    """Project code would run in a directory the user has not trusted."""


class SandboxError(UsageError):
    """The manifest asks for a sandbox this machine cannot give (no Landlock, no
    seccomp, not Linux); the message names what is missing and the line that runs
    the agent unconfined instead."""


class SessionError(RunError):
    """A session file cannot be read or written."""


class ConversionError(UsageError):
    """A session cannot be turned into a test as asked (`assemble sessions to-test`):
    its workspace cannot be rebuilt, its manifest is gone, the output exists, ..."""


class ReplayDivergence(ProviderError):
    """A replayed run sent the model something other than the session recorded; the
    message locates the first difference (`turn 3: section `tools` changed: ...`)."""


class MemoryStoreError(RunError):
    """A memory record is invalid or the store cannot be written."""


class MCPError(RunError):
    """An MCP server failed to start, initialise or answer."""
