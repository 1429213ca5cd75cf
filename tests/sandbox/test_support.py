"""Fail closed: a sandbox this machine cannot give refuses the run, with one message
naming what is missing and the line that runs unconfined; `assemble doctor` reports."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from clirun import assemble

from assembler.agent.build import build_agent
from assembler.errors import SandboxError
from assembler.sandbox import support
from assembler.sandbox.spec import SandboxSpec
from assembler.testing import ScriptedModel
from assembler.validation.load import load_manifest

MANIFEST = """\
version: 1
name: confined
identity: x
model: scripted:none.yaml
sandbox: {filesystem: workspace-write, network: off}
"""

HERE = support.probe()
NOTHING = replace(HERE, platform="darwin", landlock_abi=0, seccomp=False, seccomp_arch=None)
NO_LANDLOCK = replace(HERE, platform="linux", landlock_abi=0)


def test_each_missing_part_is_named() -> None:
    confined = SandboxSpec("workspace-write", "off")
    assert NOTHING.missing(confined) == [
        "a Linux kernel (this is darwin: Landlock and seccomp are Linux's)"
    ]
    assert NO_LANDLOCK.missing(confined)[0].startswith("Landlock (Linux 5.13 or later")
    assert NO_LANDLOCK.missing(SandboxSpec("off", "off")) == []  # seccomp is enough there
    assert NOTHING.missing(SandboxSpec("off", "on")) == []  # nothing asked, nothing missing


def test_building_an_agent_refuses_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(MANIFEST)
    (tmp_path / "none.yaml").write_text("- text: hi\n")
    monkeypatch.setattr(support, "probe", lambda: NO_LANDLOCK)
    model = ScriptedModel(["never asked"])
    with pytest.raises(SandboxError) as caught:
        build_agent(load_manifest(path), provider=model, trust=True, record_session=False)
    message = str(caught.value)
    assert message.startswith(f"{path}: the manifest asks for `sandbox: {{filesystem: ")
    assert "it lacks Landlock" in message
    assert "write `sandbox: {filesystem: off}` in the manifest" in message
    assert model.requests == []


def test_the_cli_shows_the_refusal_as_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(MANIFEST)
    (tmp_path / "none.yaml").write_text("- text: hi\n")
    monkeypatch.setattr(support, "probe", lambda: NOTHING)
    outcome = assemble(capsys, "run", str(path), "-p", "hi", "--trust")
    assert outcome.code != 0
    [line] = outcome.err.strip().splitlines()
    assert line.startswith("error: ") and "sandbox: {filesystem: off}" in line


def test_doctor_reports_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = assemble(capsys, "doctor", "--format", "json")
    assert outcome.code == 0
    report = json.loads(outcome.out)
    assert set(report) >= {"platform", "landlock", "seccomp", "user namespaces", "bubblewrap"}
    if HERE.landlock_abi:
        assert report["landlock"].startswith(f"ABI {HERE.landlock_abi}")


def test_doctor_says_whether_a_manifest_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(MANIFEST)
    (tmp_path / "none.yaml").write_text("- text: hi\n")
    monkeypatch.setattr(support, "probe", lambda: NO_LANDLOCK)
    outcome = assemble(capsys, "doctor", str(path))
    assert outcome.code == 1
    assert "this machine cannot give its sandbox" in outcome.out
    assert "Landlock" in outcome.out
