"""agent-assembler: turn a YAML manifest into a running AI agent.

    from assembler import build_agent, load_manifest
    agent = build_agent(load_manifest("agents/reviewer.yaml"))
    result = await agent.prompt("review the last commit")

Names are imported on first use, so `import assembler` (and the `assemble` command's
start-up) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from assembler.version import __version__

_EXPORTS = {
    "load_manifest": "assembler.validation.load",
    "build_agent": "assembler.agent",
    "BuildOptions": "assembler.agent.options",
    "Agent": "assembler.agent",
    "AgentState": "assembler.agent.state",
    "RunResult": "assembler.agent",
    "Manifest": "assembler.manifest.model",
    "LoaderFlags": "assembler.resources.loader",
    # every error a caller may catch (assembler.errors has the tree)
    "AssemblerError": "assembler.errors",
    "UsageError": "assembler.errors",
    "RunError": "assembler.errors",
    "ManifestError": "assembler.errors",
    "PromptContextError": "assembler.errors",
    "TemplateError": "assembler.errors",
    "TemplateSecurityError": "assembler.errors",
    "RenderError": "assembler.errors",
    "ProviderError": "assembler.errors",
    "ContextOverflowError": "assembler.errors",
    "ConfigurationError": "assembler.errors",
    "UnknownProviderError": "assembler.errors",
    "MissingCredentialsError": "assembler.errors",
    "ToolError": "assembler.errors",
    "ExtensionError": "assembler.errors",
    "PermissionRuleError": "assembler.errors",
    "ParameterError": "assembler.errors",
    "MissingExtraError": "assembler.errors",
    "TrustError": "assembler.errors",
    "SandboxError": "assembler.errors",
    "SessionError": "assembler.errors",
    "ConversionError": "assembler.errors",
    "ReplayDivergence": "assembler.errors",
    "MemoryStoreError": "assembler.errors",
    "MCPError": "assembler.errors",
    "Issue": "assembler.errors",
    # every event a run yields (`agent.stream`), and their union `Event`
    "Event": "assembler.runner.events",
    "RunStart": "assembler.runner.events",
    "TurnStart": "assembler.runner.events",
    "TextDeltaEvent": "assembler.runner.events",
    "ReasoningEvent": "assembler.runner.events",
    "ToolCallProposed": "assembler.runner.events",
    "ToolCallBlocked": "assembler.runner.events",
    "ToolCallResult": "assembler.runner.events",
    "UsageEvent": "assembler.runner.events",
    "TurnEnd": "assembler.runner.events",
    "Diagnostic": "assembler.runner.events",
    "ErrorEvent": "assembler.runner.events",
    "UserMessageDelivered": "assembler.runner.events",
    "Compacted": "assembler.runner.events",
    "RunEnd": "assembler.runner.events",
    "SubagentEvent": "assembler.runner.events",
    "PlanUpdated": "assembler.runner.events",
    "canonical_json": "assembler.prompt.canonical",
}

__all__ = [
    "Agent",
    "AgentState",
    "AssemblerError",
    "BuildOptions",
    "Compacted",
    "ConfigurationError",
    "ContextOverflowError",
    "ConversionError",
    "Diagnostic",
    "ErrorEvent",
    "Event",
    "ExtensionError",
    "Issue",
    "LoaderFlags",
    "MCPError",
    "Manifest",
    "ManifestError",
    "MemoryStoreError",
    "MissingCredentialsError",
    "MissingExtraError",
    "ParameterError",
    "PermissionRuleError",
    "PlanUpdated",
    "PromptContextError",
    "ProviderError",
    "ReasoningEvent",
    "RenderError",
    "ReplayDivergence",
    "RunEnd",
    "RunError",
    "RunResult",
    "RunStart",
    "SandboxError",
    "SessionError",
    "SubagentEvent",
    "TemplateError",
    "TemplateSecurityError",
    "TextDeltaEvent",
    "ToolCallBlocked",
    "ToolCallProposed",
    "ToolCallResult",
    "ToolError",
    "TrustError",
    "TurnEnd",
    "TurnStart",
    "UnknownProviderError",
    "UsageError",
    "UsageEvent",
    "UserMessageDelivered",
    "__version__",
    "build_agent",
    "canonical_json",
    "load_manifest",
]

if TYPE_CHECKING:
    from assembler.agent import Agent, RunResult, build_agent
    from assembler.agent.options import BuildOptions
    from assembler.agent.state import AgentState
    from assembler.errors import (
        AssemblerError,
        ConfigurationError,
        ContextOverflowError,
        ConversionError,
        ExtensionError,
        Issue,
        ManifestError,
        MCPError,
        MemoryStoreError,
        MissingCredentialsError,
        MissingExtraError,
        ParameterError,
        PermissionRuleError,
        PromptContextError,
        ProviderError,
        RenderError,
        ReplayDivergence,
        RunError,
        SandboxError,
        SessionError,
        TemplateError,
        TemplateSecurityError,
        ToolError,
        TrustError,
        UnknownProviderError,
        UsageError,
    )
    from assembler.manifest.model import Manifest
    from assembler.prompt.canonical import canonical_json
    from assembler.resources.loader import LoaderFlags
    from assembler.runner.events import (
        Compacted,
        Diagnostic,
        ErrorEvent,
        Event,
        PlanUpdated,
        ReasoningEvent,
        RunEnd,
        RunStart,
        SubagentEvent,
        TextDeltaEvent,
        ToolCallBlocked,
        ToolCallProposed,
        ToolCallResult,
        TurnEnd,
        TurnStart,
        UsageEvent,
        UserMessageDelivered,
    )
    from assembler.validation.load import load_manifest


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'assembler' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
