"""Generated projects for the scale benchmarks: one manifest with N Python tools in one
module, or N skills in one directory."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from _timing import REPO, assemble, process_cpu, report, tree_command, warm_bytecode_env

MODULE = "bench_tools.many"


def tools_project(root: Path, tools: int) -> Path:
    """A manifest whose `python:` set names `tools` functions of one module, each with
    typed parameters (one a `Literal`) and a Google-style docstring."""
    package = root / "bench_tools"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    functions = "".join(
        f'''

def tool_{i:04d}(path: str, count: int = 3, mode: Literal["fast", "slow"] = "fast") -> str:
    """Do thing {i} to a file in the workspace.

    Args:
        path: the file, relative to the workspace.
        count: how many times to do it.
        mode: how thoroughly.
    """
    return f"{{path}} {{count}} {{mode}}"
'''
        for i in range(tools)
    )
    (package / "many.py").write_text("from typing import Literal\n" + functions)
    entries = "".join(f"        - {MODULE}:tool_{i:04d}\n" for i in range(tools))
    python_set = f"    - python:\n{entries}" if tools else ""
    return _manifest(root, f"tools:\n  sets:\n    - builtin: readonly\n{python_set}")


def skills_project(root: Path, skills: int) -> Path:
    """A manifest with one skill directory holding `skills` skills."""
    for i in range(skills):
        folder = root / "skills" / f"skill-{i:04d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Use skill {i} when `read` shows "
            "a file in the format it handles.\n---\n\n# Skill\n\nThe steps.\n"
        )
    (root / "skills").mkdir(parents=True, exist_ok=True)
    return _manifest(root, "tools:\n  sets: [readonly]\nskills:\n  - skills\n")


def _manifest(root: Path, rest: str) -> Path:
    (root / "workspace").mkdir(parents=True, exist_ok=True)
    manifest = root / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: scale\nidentity: You are a benchmark agent.\n"
        "model: openai:gpt-4o\nworkspace: workspace\n" + rest
    )
    return manifest


def scale(
    command: Sequence[str],
    *,
    sizes: Sequence[int] = (10, 100, 1000),
    runs: int = 5,
    before: Path | None = None,
    kinds: Sequence[str] = ("tools", "skills"),
) -> None:
    """`assemble <command> agent.yaml` as a whole process on generated projects: N
    Python tools in one module, then N skills, each against the same manifest with
    none (measured in the same run). Per-item cost = (CPU(N) - CPU(0)) / N; linear
    means the per-item cost at the largest size is within 2x of the one before it.

    With `before` (a source tree, `_timing.source_tree`), both trees run as `python -S
    -m assembler`, interleaved, and each size shows the per-item cost before and now."""
    label = " ".join(command)
    makers = {
        "tools": ("Python tools in one module", tools_project),
        "skills": ("skills", skills_project),
    }
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        root = Path(scratch)
        env = warm_bytecode_env(root / "pyc")
        for kind, make in (makers[k] for k in kinds):
            commands: dict[str, list[str]] = {}
            envs: dict[str, dict[str, str]] = {}
            trees = {"now": REPO, "before": before} if before is not None else {"now": None}
            for size in (0, *sizes):
                manifest = make(root / f"{make.__name__}-{size}", size)
                for name, tree in trees.items():
                    if tree is None:
                        commands[f"{name} {size}"] = assemble(*command, str(manifest))
                    else:
                        argv, envs[f"{name} {size}"] = tree_command(
                            tree, root / "pyc", *command, str(manifest)
                        )
                        commands[f"{name} {size}"] = argv
            cpu = process_cpu(commands, runs=runs, env=env, envs=envs)
            rows = []
            per_item: dict[str, dict[int, float]] = {}
            for name in trees:
                base = cpu[f"{name} 0"]
                rows.append((f"{name}: {label} with 0 {kind}", f"{base * 1000:8.1f} ms CPU"))
                per_item[name] = {}
                for size in sizes:
                    per_item[name][size] = (cpu[f"{name} {size}"] - base) / size
                    rows.append(
                        (
                            f"{name}: {size:,} {kind}",
                            f"{cpu[f'{name} {size}'] * 1000:8.1f} ms CPU, "
                            f"{per_item[name][size] * 1e6:8.1f} us per item",
                        )
                    )
                last, previous = sizes[-1], sizes[-2]
                growth = per_item[name][last] / per_item[name][previous]
                rows.append(
                    (
                        f"{name}: per item at {last:,} / per item at {previous:,}",
                        f"{growth:5.2f}x ({'linear' if growth <= 2 else 'NOT linear'}; target <= 2x)",
                    )
                )
            if before is not None:
                for size in sizes:
                    now, then = per_item["now"][size], per_item["before"][size]
                    rows.append((f"per item now / before, {size:,} {kind}", f"{now / then:5.2f}x"))
            report(f"{label}: {kind} (median CPU of {runs} runs, warm bytecode)", rows)
