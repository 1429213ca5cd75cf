"""Loading a sub-agent tree: every manifest read and validated once (issue 20, item 19).

A team is `LAYERS` layers of `WIDTH` manifests; each manifest delegates to four of
the next layer (`agent:` tool sets to files i, i+1, i+2, i+3 of it, modulo the width),
so the number of paths from the root grows as 4^(layers-1) while the number of files
is WIDTH x LAYERS. Measured at 10, 100 and 1,000 files (10 layers of 1, 10 and 100;
the 10-file tree is the diamond of the issue, 4^9 = 262,144 paths to its last file).

What is timed is what every front end does to a tree before anything runs: load and
validate the root (`load_manifest`, which validates the tree below it), load the team
(`load_team`), decide trust over it (`tree_code`, what `decide_trust` lists) and find
the agent's guards (`guarded_paths`). The baseline is `load_manifest` of one manifest
without sub-agents, in the same run: the cost per file against it should stay flat
as the tree grows, if the cost is linear in files.

Run: `python bench/bench_team_tree.py`.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from _timing import median_seconds, report

LAYERS = 10
WIDTHS = (1, 10, 100)
FANOUT = 4


def team(root: Path, width: int) -> Path:
    (root / "work").mkdir()
    (root / "r.yaml").write_text("- text: ok\n")
    for layer in range(LAYERS):
        for index in range(width):
            if layer < LAYERS - 1:
                targets = [(index + k) % width for k in range(FANOUT)]
                sets = "".join(
                    f"    - agent: l{layer + 1}_{t}.yaml\n      name: to{k}_{t}\n"
                    for k, t in enumerate(targets)
                )
                tools = f"tools:\n  sets:\n{sets}"
            else:
                tools = "tools:\n  sets: [readonly]\n"
            (root / f"l{layer}_{index}.yaml").write_text(
                f"version: 1\nname: l{layer}_{index}\ndescription: Layer {layer}.\n"
                "identity: You help.\nmodel: scripted:r.yaml\nworkspace: work\n"
                "limits:\n  max_agent_depth: 16\n" + tools
            )
    (root / "single.yaml").write_text(
        "version: 1\nname: single\nidentity: You help.\nmodel: scripted:r.yaml\n"
        "workspace: work\ntools:\n  sets: [readonly]\n"
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


def main() -> None:
    from assembler.validation.load import load_manifest

    rows: list[tuple[str, str]] = []
    for width in WIDTHS:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            first = team(root, width)
            files = LAYERS * width
            single = root / "single.yaml"
            baseline = median_seconds(lambda: load_manifest(single), repeat=20)  # noqa: B023
            samples = []
            agents = 0
            for _ in range(3 if files >= 1000 else 7):
                start = time.perf_counter()
                agents = load_tree(first)
                samples.append(time.perf_counter() - start)
            tree = statistics.median(samples)
            per_file = tree / files
            rows.append(
                (
                    f"{files:>5} files ({width} x {LAYERS} layers, {FANOUT ** (LAYERS - 1) * width:,} paths)",
                    f"tree {tree * 1000:8.1f} ms; {agents} agents; one manifest "
                    f"{baseline * 1000:.2f} ms; per file {per_file / baseline:.2f}x one manifest",
                )
            )
    report("loading, trusting and guarding a sub-agent tree, per file against one manifest", rows)


if __name__ == "__main__":
    main()
