"""Loading a sub-agent tree: every manifest read and validated once (issue 20, item 19).

A team is `LAYERS` layers of `WIDTH` manifests; manifest i of a layer delegates to
manifests 4i .. 4i+3 (modulo the width) of the next (`agent:` tool sets), so from the
second or third layer on every manifest is reached, and the number of paths from the
root grows as 4^(layers-1) while the number of files is about WIDTH x LAYERS.
Measured at 10, 100 and 1,000 files (10 layers of 1, 10 and 100; the 10-file tree is
the diamond of the issue, 4^9 = 262,144 paths to its last file).

What is timed is what every front end does to a tree before anything runs: load and
validate the root (`load_manifest`, which validates the tree below it), load the team
(`load_team`), list its code for trust (`tree_code`) and find the agent's guards
(`guarded_paths`). The baseline, in the same run: loading the same number of
manifests one by one, each on its own without sub-agents (`load_manifest` per file).
If the tree's cost is linear in files, the ratio stays flat as the tree grows; before
the fix, the 10-file diamond alone took 4^10 validations.

Run: `python bench/bench_team_tree.py`.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from _timing import report

LAYERS = 10
WIDTHS = (1, 10, 100)
FANOUT = 4


def team(root: Path, width: int) -> Path:
    (root / "work").mkdir()
    (root / "alone").mkdir()
    (root / "r.yaml").write_text("- text: ok\n")
    for layer in range(LAYERS):
        for index in range(width):
            head = (
                f"version: 1\nname: l{layer}_{index}\ndescription: Layer {layer}.\n"
                "identity: You help.\nmodel: scripted:r.yaml\nworkspace: work\n"
                "limits:\n  max_agent_depth: 16\n"
            )
            if layer < LAYERS - 1:
                targets = [(FANOUT * index + k) % width for k in range(FANOUT)]
                sets = "".join(
                    f"    - agent: l{layer + 1}_{t}.yaml\n      name: to{k}_{t}\n"
                    for k, t in enumerate(targets)
                )
                tools = f"tools:\n  sets:\n{sets}"
            else:
                tools = "tools:\n  sets: [readonly]\n"
            (root / f"l{layer}_{index}.yaml").write_text(head + tools)
            alone = head.replace("scripted:r.yaml", "scripted:../r.yaml").replace(
                "workspace: work", "workspace: ../work"
            )
            (root / "alone" / f"l{layer}_{index}.yaml").write_text(
                alone + "tools:\n  sets: [readonly]\n"
            )
    return root / "l0_0.yaml"


def load_tree(root_manifest: Path) -> int:
    from assembler.agent.guards import guarded_paths
    from assembler.agent.team import load_team
    from assembler.agent.trusting import tree_code
    from assembler.validation.load import load_manifest

    member = load_team(load_manifest(root_manifest))
    tree_code(member)
    guarded_paths(member)
    return 1 + sum(1 for _ in member.unique())


def load_alone(root: Path, count: int) -> None:
    from assembler.validation.load import load_manifest

    for path in sorted((root / "alone").glob("*.yaml"))[:count]:
        load_manifest(path)


def main() -> None:
    rows: list[tuple[str, str]] = []
    for width in WIDTHS:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            first = team(root, width)
            rounds = 3 if width >= 100 else 7
            samples, baseline = [], []
            agents = 0
            for _ in range(rounds):
                start = time.perf_counter()
                agents = load_tree(first)
                samples.append(time.perf_counter() - start)
                start = time.perf_counter()
                load_alone(root, agents)
                baseline.append(time.perf_counter() - start)
            tree, alone = statistics.median(samples), statistics.median(baseline)
            paths = FANOUT ** (LAYERS - 1)
            rows.append(
                (
                    f"{agents:>4} manifests ({width} x {LAYERS} layers, {paths:,}+ paths)",
                    f"tree {tree * 1000:7.1f} ms; the same number loaded one by one "
                    f"{alone * 1000:7.1f} ms; {tree / alone:.2f}x; per manifest "
                    f"{tree / agents * 1000:.2f} ms",
                )
            )
    report("loading, trusting and guarding a sub-agent tree against its manifests alone", rows)


if __name__ == "__main__":
    main()
