"""A project to record sessions in and turn them into tests: a private copy of the
repository's agents and the shipping example, committed in a real git repository (so
the session's header records where its workspace started), and a manifest
(`agents/fixer.yaml`) that has something of every kind a change can touch: identity,
context, a tool set with guidelines, a Python tool, skills, a context file, an
extension, permissions and model settings.

`record` runs the agent with a scripted model (in process, sessions recorded),
`to_test` converts a session, `replay` runs the converted task as `assemble eval`
does (in process, one run) and returns its record.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assembler.agent.build import build_agent
from assembler.agent.team import load_team
from assembler.agent.trusting import decide_trust
from assembler.eval.evaluation import check_code
from assembler.eval.execute import run_task
from assembler.eval.load import load_eval
from assembler.eval.plan import Selection, plan_runs
from assembler.eval.records import RunRecord
from assembler.regress.convert import Conversion, ConvertOptions, convert
from assembler.testing import ScriptedModel, text, tool_call

REPO = Path(__file__).resolve().parents[2]
TESTS = "python3 -m unittest discover -s tests -t ."
PROMPT = "Fix the failing shipping test."

MANIFEST = """\
version: 1
name: fixer
identity: |
  You are a careful maintainer of a small Python repository.
  Read a file with `read` before you edit it.
context:
  repository: shipping
  currency: EUR
model:
  provider: scripted
  name: replay
  script: fixer.script.yaml
  temperature: 0.2
workspace: ../examples/shipping
tools:
  sets:
    - builtin: coding
      allow: [read, edit, bash]
    - python:
        - function: shop_tools:quote_fee
  guidelines:
    - Never change files under `tests/`; the tests are the specification.
skills:
  - ../examples/shipping/skills
  - ../extra-skills
memory:
  selection: {strategy: all}
  extraction: {tool: false, at_session_end: false}
  injection: system
context_files:
  - AGENTS.md
extensions:
  - path: extensions/protect_tests.py
    options:
      patterns: ["tests/*"]
limits:
  max_turns: 12
"""

SCRIPT = [
    tool_call("bash", command=TESTS),
    tool_call("read", path="shipping/fees.py"),
    tool_call(
        "edit", path="tests/test_fees.py", old_text="499 + 2 * 150", new_text="499 + 1 * 150"
    ),
    tool_call(
        "edit",
        path="shipping/fees.py",
        old_text="math.floor(weight_kg)",
        new_text="math.ceil(weight_kg)",
    ),
    tool_call("bash", command=TESTS),
    text("Fixed: started kilograms round up, and the tests pass."),
]
"""The shipping fix: tests, read, a refused edit of a test, the fix, tests, answer."""


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def make_project(root: Path, manifest: str = MANIFEST) -> Path:
    """The project at `root`, committed; the fixer's manifest in `agents/fixer.yaml`."""
    root.mkdir(parents=True)
    for name in ("agents", "examples"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "agents" / "fixer.yaml").write_text(manifest, "utf-8")
    (root / "extra-skills").mkdir()
    (root / "extra-skills" / "README.md").write_text("More skills, one folder each.\n", "utf-8")
    (root / "agents" / "fixer.script.yaml").write_text("- text: unused\n", "utf-8")
    (root / ".gitignore").write_text(".sessions/\neval-results/\n__pycache__/\n", "utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the project")
    return root


def record(
    project: Path,
    steps: Sequence[Any] = SCRIPT,
    prompt: str = PROMPT,
    *,
    manifest: str = "agents/fixer.yaml",
    then: Sequence[str] = (),
) -> Path:
    """Run the agent on `prompt` (then each of `then`) with `steps` as its model; the
    session file."""
    model = ScriptedModel(steps)
    agent = build_agent(
        project / manifest, provider=model, session_dir=project / ".sessions", trust=True
    )

    async def go() -> None:
        async with agent:
            for text_ in (prompt, *then):
                await agent.prompt(text_)

    asyncio.run(go())
    model.assert_consumed()
    assert agent.session is not None
    return agent.session.path


def restore_workspace(project: Path) -> None:
    """The example as committed (a recorded run edited it)."""
    git(project, "checkout", "-q", "--", "examples")


def to_test(session: Path, out: Path, **options: Any) -> Conversion:
    conversion = convert(session, ConvertOptions(out=out, **options))
    conversion.write(force=True)
    return conversion


def replay(eval_file: Path, *, model: str | None = None, repeat: int = 1) -> list[RunRecord]:
    """Every run of the eval's tasks, one after the other, in process."""
    report = load_eval(eval_file)
    assert report.spec is not None and report.manifest is not None
    manifest = report.manifest
    runs = plan_runs(
        report.spec,
        Selection(repeat=repeat, model=model),
        eval_file.parent / ".eval-sessions",
    )
    team = load_team(manifest)
    trust = decide_trust(team, True, extra=check_code(report.spec, runs, manifest))

    async def go() -> list[RunRecord]:
        return [await run_task(run, manifest=manifest, team=team, trust=trust) for run in runs]

    return asyncio.run(go())


def replay_one(eval_file: Path, **options: Any) -> RunRecord:
    (record_,) = replay(eval_file, **options)
    return record_


def failure(record_: RunRecord) -> str:
    """The replay check's evidence (what diverged), or why the run did not pass."""
    for check in record_.checks:
        if check.kind == "replay":
            return check.evidence
    return record_.first_failure()


def edit_file(path: Path, old: str, new: str) -> None:
    text_ = path.read_text("utf-8")
    assert old in text_, f"{old!r} is not in {path}"
    path.write_text(text_.replace(old, new, 1), "utf-8")
