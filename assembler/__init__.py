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

__version__ = "0.1.0"

_EXPORTS = {
    "load_manifest": "assembler.manifest.loader",
    "build_agent": "assembler.build",
    "Agent": "assembler.agent",
    "RunResult": "assembler.agent",
    "Manifest": "assembler.manifest.model",
    "LoaderFlags": "assembler.resources.loader",
    "AssemblerError": "assembler.errors",
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
    "SessionError": "assembler.errors",
    "MemoryStoreError": "assembler.errors",
    "MCPError": "assembler.errors",
    "Issue": "assembler.errors",
    "canonical_json": "assembler.canonical",
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
    "RunResult",
    "SessionError",
    "TemplateError",
    "TemplateSecurityError",
    "ToolError",
    "TrustError",
    "UnknownProviderError",
    "build_agent",
    "canonical_json",
    "load_manifest",
]

if TYPE_CHECKING:
    from assembler.agent import Agent, RunResult
    from assembler.build import build_agent
    from assembler.canonical import canonical_json
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
        SessionError,
        TemplateError,
        TemplateSecurityError,
        ToolError,
        TrustError,
        UnknownProviderError,
    )
    from assembler.manifest.loader import load_manifest
    from assembler.manifest.model import Manifest
    from assembler.resources.loader import LoaderFlags


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'assembler' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
