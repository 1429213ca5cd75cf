"""The system prompt: per-turn render in one process, and `assemble render --dry-run`
as a whole process.

(a) An agent with 30 tools, 20 skills and 5 selected memories, rendered through the
    `SystemPromptProvider` exactly as the runner calls it before each request.
    A cache hit (nothing model-visible changed) and a cache miss (this turn's memory
    selection changed) against baselines measured in the same run: `str.join` of the
    same section strings, and a plain `jinja2` render of the tool-catalog template.
    Targets: hit < 50 us, miss < 1 ms.
(b) `assemble render --dry-run agents/shipping-fixer.yaml` against
    `python -c "import yaml, jsonschema, jinja2, click"`: median CPU time (user +
    sys) of 15 interleaved runs each. Target: within 1.2x with a bytecode cache for
    the project, as any installed package has (issues 12, 21): with the section
    templates compiled and kept by an earlier run of an agent, and without (a first
    dry run). Also shown without bytecode (PYTHONDONTWRITEBYTECODE, every `assembler`
    module compiled on every run).
(c) The same command on manifests with 10, 100 and 1,000 Python tools in one module,
    and with as many skills: the cost per tool and per skill at 1,000 within 2x of
    the cost at 100 (issue 12).

Run: `python bench/bench_render.py [--runs N] [--before REV] [--only turn|process|scale]
[--sizes 10,100,1000] [--kinds tools,skills]`; `--before` runs (c) on the package as of
a git revision too, interleaved.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from _projects import scale
from _timing import baseline_imports, process_cpu, source_tree, warm_bytecode_env

REPO = Path(__file__).resolve().parents[1]

TOOLS = 30
SKILLS = 20
MEMORIES = 5


def median_seconds(function: Callable[[], object], *, repeat: int, warmup: int = 50) -> float:
    for _ in range(warmup):
        function()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def micros(seconds: float) -> str:
    return f"{seconds * 1e6:8.1f} us"


def verdict(ok: bool) -> str:
    return "OK" if ok else "MISSED"


def report(title: str, rows: Sequence[tuple[str, str]]) -> None:
    print(f"\n## {title}")
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name.ljust(width)}  {value}")


# -- (a) per-turn render in one process -------------------------------------------------


def per_turn(repeat: int) -> None:
    import jinja2

    from assembler.prompt.provider import SystemPromptProvider
    from assembler.prompt.renderer import (
        ContextFileView,
        DynamicPromptRenderer,
        MemoryEntry,
        SkillEntry,
        WorkspaceView,
    )
    from assembler.prompt.templates import default_template_text
    from assembler.tools.base import Tool, ToolContext, ToolResult
    from assembler.tools.registry import ToolRegistry

    async def execute(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult("")

    tools = [
        Tool(
            name=f"tool_{i:02d}",
            description=f"Tool number {i}: does one precise thing to the workspace. " * 3,
            parameters={"type": "object", "properties": {"path": {"type": "string"}}},
            execute=execute,
            snippet=f"Do the thing number {i} (one line)" if i % 3 else "",
            guidelines=(f"Use tool_{i:02d} only when it fits.",) if i % 5 == 0 else (),
            source="builtin",
        )
        for i in range(TOOLS)
    ]
    registry = ToolRegistry(tools, ["Never change tests.", "Read before you edit."])
    skills = [
        SkillEntry(
            f"skill-{i:02d}",
            f"What skill {i} is for, and when to read it (a sentence or two).",
            f"skills/skill-{i:02d}/SKILL.md",
        )
        for i in range(SKILLS)
    ]
    agents_md = "# Project\n\n" + "\n".join(f"- rule {i}: keep it simple" for i in range(40))
    workspace = WorkspaceView("/srv/project", (ContextFileView("AGENTS.md", agents_md),))
    memories = tuple(
        MemoryEntry(f"memory-{i}", "project", f"What memory {i} is about.", "Body line.\n" * 5)
        for i in range(MEMORIES)
    )
    turn = [0]

    def same_selection() -> tuple[MemoryEntry, ...]:
        return memories

    def new_selection() -> tuple[MemoryEntry, ...]:
        turn[0] += 1  # a selection this renderer has not seen: every call misses
        first = MemoryEntry("turn", "user", "This turn's note.", f"Turn {turn[0]}.")
        return (first, *memories[1:])

    context = {"repository": "project", "currency": "EUR", "limits": {"turns": 12}}

    def provider(memory: Callable[[], Sequence[MemoryEntry]]) -> SystemPromptProvider:
        return SystemPromptProvider(
            DynamicPromptRenderer(),
            identity="You are a careful maintainer of a Python repository.",
            context=context,
            registry=registry,
            workspace=workspace,
            skills=skills,
            memory=memory,
        )

    hitting = provider(same_selection)
    prompt = hitting()
    hit = median_seconds(hitting, repeat=repeat)
    assert hitting.renderer.cache_misses == 1, "the hit loop missed the cache"

    missing = provider(new_selection)
    miss = median_seconds(missing, repeat=max(repeat // 10, 200))
    assert missing.renderer.cache_hits == 0, "the miss loop hit the cache"

    sections = [f"## {s.name}\n{s.text}" for s in hitting.render().sections]
    assert "\n\n".join(sections) == prompt
    join = median_seconds(lambda: "\n\n".join(sections), repeat=repeat)

    plain = jinja2.Environment(autoescape=False).from_string(default_template_text("tools"))
    entries, guidelines = registry.prompt_view()
    one_template = median_seconds(
        lambda: plain.render(tools=entries, guidelines=guidelines), repeat=max(repeat // 10, 200)
    )

    report(
        f"per-turn render: {TOOLS} tools, {SKILLS} skills, {MEMORIES} memories, "
        f"{len(prompt):,} characters (median)",
        [
            ("baseline: str.join of the same section strings", micros(join)),
            ("baseline: plain jinja2 render of the tools template", micros(one_template)),
            ("cache hit (provider call, nothing changed)", micros(hit)),
            ("cache miss (provider call, new memory selection)", micros(miss)),
            ("hit  / join baseline", f"{hit / join:8.1f}x    target: hit < 50 us"),
            ("miss / jinja2 baseline", f"{miss / one_template:8.1f}x    target: miss < 1 ms"),
            ("verdict", f"hit {verdict(hit < 50e-6)}, miss {verdict(miss < 1e-3)}"),
        ],
    )


# -- (b) the whole process ----------------------------------------------------------------


KEEP_TEMPLATES = (
    "from assembler.prompt.templates import compile_template, default_template_text\n"
    "for s in ('identity', 'tools', 'workspace', 'skills', 'memory'):\n"
    "    compile_template(default_template_text(s), True)\n"
)


def whole_process(runs: int) -> None:
    assemble = str(Path(sys.executable).parent / "assemble")
    commands = {
        "baseline: python -c 'import yaml, jsonschema, jinja2, click'": baseline_imports(),
        "assemble render --dry-run agents/shipping-fixer.yaml": [
            assemble,
            "render",
            "--dry-run",
            "agents/shipping-fixer.yaml",
        ],
    }
    with tempfile.TemporaryDirectory(prefix="bench-render-pyc-") as cache:
        uncached = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        uncached.pop("PYTHONPYCACHEPREFIX", None)
        warm = warm_bytecode_env(Path(cache))
        kept = {**warm, "ASSEMBLER_CACHE_DIR": str(Path(cache) / "kept")}
        subprocess.run([sys.executable, "-c", KEEP_TEMPLATES], env=kept, check=True)
        cases = (
            (
                "with a bytecode cache, templates kept (after any run of an agent)",
                kept,
                "target: <= 1.2x",
            ),
            (
                "with a bytecode cache, no templates kept yet (a first dry run)",
                {**warm, "ASSEMBLER_CACHE_DIR": str(Path(cache) / "empty")},
                "target: <= 1.2x",
            ),
            ("without bytecode", uncached, "(no target)"),
        )
        if shutil.which("valgrind"):
            instructions(commands, cases[:2])
        for label, env, target in cases:
            cpu = process_cpu(commands, runs=runs, env=env, cwd=REPO)
            (base_name, base), (name, ours) = cpu.items()
            report(
                f"render --dry-run, whole process, {label} (median CPU of {runs})",
                [
                    (base_name, f"{base * 1000:6.1f} ms"),
                    (name, f"{ours * 1000:6.1f} ms"),
                    ("ratio", f"{ours / base:6.2f}x   {target}"),
                ],
            )


def instructions(
    commands: Mapping[str, Sequence[str]], cases: Sequence[tuple[str, Mapping[str, str], str]]
) -> None:
    """Instructions executed (valgrind's cachegrind), one run each: a count that the
    machine's load does not move, unlike time. Interpreter from the virtual
    environment's own binary, so the count is of Python, not of a launcher."""
    python = os.path.realpath(sys.executable)
    for label, env, _ in cases:
        counts = {}
        for name, command in commands.items():
            argv = [python, *command[1:]] if command[0] == sys.executable else command
            subprocess.run(argv, env=env, cwd=REPO, capture_output=True, check=False)  # warm
            done = subprocess.run(
                ["valgrind", "--tool=cachegrind", "--cache-sim=no",
                 "--cachegrind-out-file=/dev/null", "--trace-children=yes", *argv],
                env=env, cwd=REPO, capture_output=True, text=True, check=False,
            )  # fmt: skip
            refs = [line for line in done.stderr.splitlines() if "I   refs" in line]
            counts[name] = sum(int(line.split()[-1].replace(",", "")) for line in refs)
        (base_name, base), (name, ours) = counts.items()
        report(
            f"render --dry-run, instructions executed, {label}",
            [
                (base_name, f"{base / 1e6:8.1f} M"),
                (name, f"{ours / 1e6:8.1f} M"),
                ("ratio", f"{ours / base:6.2f}x"),
            ],
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="process runs per command")
    parser.add_argument("--repeat", type=int, default=20_000, help="in-process repetitions")
    parser.add_argument(
        "--before", metavar="REV", help="also run the package as of this git revision, paired"
    )
    parser.add_argument(
        "--only", choices=("turn", "process", "scale"), help="run one part of the benchmark"
    )
    parser.add_argument("--sizes", default="10,100,1000", help="sizes of (c), e.g. 100,1000,10000")
    parser.add_argument("--kinds", default="tools,skills", help="what (c) grows: tools, skills")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]} on {sys.platform}")
    if args.only in (None, "turn"):
        per_turn(args.repeat)
    if args.only in (None, "process"):
        whole_process(args.runs)
    if args.only in (None, "scale"):
        with tempfile.TemporaryDirectory(prefix="bench-before-") as scratch:
            before = source_tree(args.before, Path(scratch)) if args.before else None
            scale(
                ["render", "--dry-run"],
                runs=max(args.runs // 2, 3),
                before=before,
                sizes=[int(size) for size in args.sizes.split(",")],
                kinds=args.kinds.split(","),
            )


if __name__ == "__main__":
    main()
