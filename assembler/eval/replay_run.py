"""A task run that replays a recorded session (`assemble sessions to-test`): its
workspace rebuilt from the start file, its model the replay that compares each request
with the recording, its verdict the first divergence.

The replay applies when the run uses the task's own `scripted:` model; `--model`
runs the same task (prompts, steers, workspace, checks) against a real model, and the
recorded run becomes a live eval. In `strict` mode the replay is a check of its own
(`replay`), the first one of the run, and a divergence fails the task; in `outcome`
mode the divergences are reported in the record (`replay`) and only the checks count.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from assembler.agent.model_choice import default_label, manifest_settings
from assembler.agent.prompt_record import settings_record
from assembler.eval.checks import CheckResult
from assembler.eval.spec import RunRequest
from assembler.manifest.model import Manifest
from assembler.messages import ModelSettings
from assembler.regress.replay import Diagnosis, ReplayProvider, ReplayTree
from assembler.regress.scrub import manifest_variables, scrubber_for
from assembler.regress.start import rebuild, repository_root


@dataclass
class ReplaySetup:
    """The replay of one run: its provider (the root agent's model) and its verdict."""

    provider: ReplayProvider
    diagnosis: Diagnosis
    mode: str
    model: str | None = None
    """The model the session ran with: the agent is built as for it (its settings)."""

    @property
    def strict(self) -> bool:
        return self.mode == "strict"

    def check(self) -> CheckResult | None:
        """The `replay` check of a strict replay: passed when every request was as
        recorded (outcome mode has none: only its checks count)."""
        if not self.strict:
            return None
        first = self.diagnosis.first
        return CheckResult("replay", "replay: strict", first is None, self.diagnosis.evidence())

    def note(self) -> str:
        """The diagnosis, for the record."""
        return self.diagnosis.evidence()


def replaying(request: RunRequest) -> bool:
    """The run replays its session: it has a replay and runs the task's own script."""
    task = request.task
    return (
        task.replay is not None
        and task.model is not None
        and task.model.startswith("scripted:")
        and request.model == task.model
    )


def start_workspace(request: RunRequest, scratch: Path) -> Path | None:
    """The task's workspace rebuilt from its start file under `scratch` (None when the
    task has no start: the eval copies its workspace folder, as for any task)."""
    if request.task.start is None:
        return None
    return rebuild(Path(request.task.start), scratch)


def replay_setup(request: RunRequest, manifest: Manifest, workspace: Path) -> ReplaySetup | None:
    """The replay provider of `request` working in `workspace`, or None when the run
    does not replay."""
    task = request.task
    if not replaying(request) or task.replay is None or task.model is None:
        return None
    script = Path(task.model.removeprefix("scripted:"))
    tree = ReplayTree.load(script, Path(task.replay.expected))
    places = {"{workspace}": str(workspace)}
    if task.start is not None:
        places["{repo}"] = str(repository_root(Path(task.start)))
    names = [*manifest.tools.env.passthrough]
    if manifest.model is not None and manifest.model.api_key_env:
        names.append(manifest.model.api_key_env)
    text = manifest.path.read_text("utf-8", "replace") if manifest.path else ""
    scrubber = scrubber_for(manifest_variables(text, names), os.environ)
    diagnosis = Diagnosis(mode=task.replay.mode)
    provider = ReplayProvider(
        tree, diagnosis=diagnosis, places=places, scrubber=scrubber, name=task.model
    )
    return ReplaySetup(provider, diagnosis, task.replay.mode, _session_model(tree, manifest))


def _session_model(tree: ReplayTree, manifest: Manifest) -> str | None:
    """The model to build the agent as for: the session's, when it ran with another
    than the manifest's (`--model`, which its sub-agents got too) and was sent other
    settings than the manifest's; else None (each agent its own manifest's model). A
    session recorded in Python with a provider object is named after the provider,
    and was sent the manifest's settings: it is replayed as the manifest's model."""
    recorded = tree.expected.model
    if not recorded or recorded == default_label(manifest):
        return None
    sent = next((p.settings for p in tree.expected.prompts if p.settings is not None), None)
    own = settings_record(manifest_settings(manifest) or ModelSettings())
    return recorded if sent is not None and dict(sent) != own else None
