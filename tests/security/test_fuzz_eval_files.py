"""A mutation fuzz of eval files through `validate`: zero crashes (issue 20, "done when":
the mutation fuzz covers eval files, permission rules and bash lines).

The seeds are the repository's eval files (`evals/`), mutated in a copy of the
repository (so the agents, scripts and prompt files they name still resolve) by the
structural changes of `test_fuzz_manifests`, with eval-file keys and hostile values
added to its pools. Every mutant is validated as `assemble validate` validates an eval
file (with the agent tree it names); only `AssemblerError` may come out. A fixed seed
keeps a failure reproducible; `ASSEMBLER_FUZZ_CASES` and `ASSEMBLER_FUZZ_SEED` run it
longer or elsewhere.
"""

from __future__ import annotations

import random
import shutil
import traceback
from pathlib import Path

import pytest
import test_fuzz_manifests as manifest_fuzz
from test_fuzz_manifests import CASES, HOSTILE_VALUES, KEYS, SEED, _key_pool, _mutant

from assembler.errors import AssemblerError
from assembler.eval.load import validate_eval_file

REPO = Path(__file__).resolve().parents[2]
EVAL_KEYS = [
    "tasks", "id", "prompt", "prompt_file", "tasks_file", "checks", "answer_contains",
    "answer_matches", "command", "file_contains", "unchanged", "files_equal",
    "tool_sequence", "repeat", "timeout", "agent", "workspace", "defaults", "model",
    "messages", "replay", "start", "check_timeout",
]  # fmt: skip
EVAL_VALUES = [
    "(a+)+$", "[", "*", "prompts/../../../etc/passwd", "/etc/passwd", "tasks.yaml",
    {"answer_matches": "("}, {"command": "true"}, {"file_contains": {"path": "/", "text": ""}},
    [{"id": "x"}], [{"id": ""}], [{"prompt": None}], "x" * 256, -5, 10**12,
]  # fmt: skip


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-evals")
    for name in ("agents", "examples", "evals", "schemas"):
        shutil.copytree(
            REPO / name, root / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    return root


def _check(path: Path) -> str | None:
    try:
        validate_eval_file(path)
    except AssemblerError:
        return None
    except Exception:
        return traceback.format_exc(limit=6)
    return None


def test_mutated_eval_files_never_crash(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seeds = sorted((project / "evals").glob("*.eval.yaml"))
    assert len(seeds) >= 2, "the fuzz needs the repository's eval files as seeds"
    monkeypatch.setattr(manifest_fuzz, "KEYS", [*KEYS, *EVAL_KEYS])
    monkeypatch.setattr(manifest_fuzz, "HOSTILE_VALUES", [*HOSTILE_VALUES, *EVAL_VALUES])
    for seed in seeds:  # the seeds themselves are valid: mutants start close to valid
        assert not validate_eval_file(seed).has_errors, seed
    rng = random.Random(SEED)
    pool = _key_pool(seeds)
    crashes: list[str] = []
    reported = 0
    for case in range(CASES // 3):
        seed = rng.choice(seeds)
        mutant = seed.with_name(f"fuzz-{case}.eval.yaml")
        mutant.write_text(_mutant(seed.read_text("utf-8"), rng, pool), "utf-8")
        crash = _check(mutant)
        if crash is not None:
            crashes.append(f"case {case} (from {seed.name}):\n{mutant.read_text()}\n{crash}")
        elif validate_eval_file(mutant).has_errors:
            reported += 1
        mutant.unlink()
    assert not crashes, "\n\n".join(crashes[:3])
    assert reported >= CASES // 30, "the mutants should mostly be reported as invalid"
