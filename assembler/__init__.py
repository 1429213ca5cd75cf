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
    "Agent": "assembler.agent",
    "RunResult": "assembler.agent",
    "Manifest": "assembler.manifest.model",
    "LoaderFlags": "assembler.resources.loader",
    "AssemblerError": "assembler.errors",
    "UsageError": "assembler.errors",
    "RunError": "assembler.errors",
    "ManifestError": "assembler.errors",
    "PromptContextError": "assembler.errors",
    "TemplateError": "assembler.errors",
    "TemplateSecurityError": "assembler.errors",
    "RenderError": "assembler.errors",
    "ProviderError": "assembler.errors",
    "UnknownProviderError": "assembler.errors",
    "MissingCredentialsError": "assembler.errors",
    "ToolError": "assembler.errors",
    "ExtensionError": "assembler.errors",
    "TrustError": "assembler.errors",
    "SandboxError": "assembler.errors",
    "SessionError": "assembler.errors",
    "MemoryStoreError": "assembler.errors",
    "MCPError": "assembler.errors",
    "Issue": "assembler.errors",
    "canonical_json": "assembler.prompt.canonical",
}

__all__ = [
    "Agent",
    "AssemblerError",
    "ExtensionError",
    "Issue",
    "LoaderFlags",
    "MCPError",
    "Manifest",
    "ManifestError",
    "MemoryStoreError",
    "MissingCredentialsError",
    "PromptContextError",
    "ProviderError",
    "RenderError",
    "RunError",
    "RunResult",
    "SandboxError",
    "SessionError",
    "TemplateError",
    "TemplateSecurityError",
    "ToolError",
    "TrustError",
    "UnknownProviderError",
    "UsageError",
    "__version__",
    "build_agent",
    "canonical_json",
    "load_manifest",
]

if TYPE_CHECKING:
    from assembler.agent import Agent, RunResult, build_agent
    from assembler.errors import (
        AssemblerError,
        ExtensionError,
        Issue,
        ManifestError,
        MCPError,
        MemoryStoreError,
        MissingCredentialsError,
        PromptContextError,
        ProviderError,
        RenderError,
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
    from assembler.validation.load import load_manifest


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'assembler' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
