"""The core install against the full one (issue 16): size, and cold-start ratios of
`validate` and `render --dry-run` against the import floor.

Builds two fresh virtual environments from this repository, `pip install .` (the core:
pyyaml, jsonschema, jinja2, click, tree-sitter) and `pip install '.[all]'`, both with
the bytecode pip compiles, then times whole processes interleaved in one run. The
baseline is each environment's own `python -c "import yaml, jsonschema, jinja2, click"`.
Run: `python bench/bench_install.py` (a few minutes: the full install is large);
`--before REF` adds an install of an earlier commit (a temporary git worktree) to the
same run, to compare with.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import REPO, process_medians, report

SIZE_PROBE = """
import importlib.metadata as m, json, os, sys
sizes = {}
for dist in m.distributions():
    name = dist.metadata["Name"]
    if name in ("pip", "setuptools"):
        continue
    total = 0
    for file in dist.files or ():
        path = dist.locate_file(file)
        if os.path.isfile(path):
            total += os.path.getsize(path)
    sizes[name] = total
print(json.dumps(sizes))
"""


def make_venv(root: Path, name: str, target: str) -> Path:
    venv = root / name
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "-q", "--disable-pip-version-check", target],
        check=True,
    )  # fmt: skip
    return venv


def sizes(venv: Path) -> dict[str, int]:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", SIZE_PROBE], capture_output=True, text=True, check=True
    )
    loaded: dict[str, int] = json.loads(done.stdout)
    return loaded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="also install this git ref, for comparison")
    before = parser.parse_args().before
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        venvs = {"core": make_venv(root, "core", str(REPO))}
        venvs["all"] = make_venv(root, "all", f"{REPO}[all]")
        if before:
            tree = root / "before-tree"
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(tree), before],
                check=True,
            )
            try:
                venvs["before"] = make_venv(root, "before", str(tree))
            finally:
                subprocess.run(
                    ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                    check=False,
                )
        for label, venv in venvs.items():
            found = sizes(venv)
            big = sorted(found.items(), key=lambda item: -item[1])[:6]
            report(
                f"{label} install: what it installs",
                [
                    ("distributions", str(len(found))),
                    ("installed size", f"{sum(found.values()) / 1e6:.1f} MB"),
                    *((f"  {name}", f"{size / 1e6:.1f} MB") for name, size in big),
                ],
            )
        core_sizes = sizes(venvs["core"])
        grammar = core_sizes.get("tree-sitter", 0) + core_sizes.get("tree-sitter-bash", 0)
        report(
            "tree-sitter + tree-sitter-bash (core, for permissions)",
            [("size", f"{grammar / 1e6:.1f} MB")],
        )

        floor = "import yaml, jsonschema, jinja2, click"
        commands: dict[str, list[str]] = {}
        for label, venv in venvs.items():
            commands[f"{label}: import floor"] = [str(venv / "bin" / "python"), "-c", floor]
            commands[f"{label}: validate"] = [
                str(venv / "bin" / "assemble"), "validate", "agents/shipping-fixer.yaml",
            ]  # fmt: skip
            commands[f"{label}: render --dry-run"] = [
                str(venv / "bin" / "assemble"), "render", "--dry-run", "agents/shipping-fixer.yaml",
            ]  # fmt: skip
        medians = process_medians(commands, cwd=REPO)
        rows = []
        for label in venvs:
            base = medians[f"{label}: import floor"]
            rows.append((f"{label}: import floor", f"{base * 1000:.1f} ms"))
            for command in ("validate", "render --dry-run"):
                ours = medians[f"{label}: {command}"]
                rows.append((f"{label}: {command}", f"{ours * 1000:.1f} ms = {ours / base:.2f}x"))
        report("cold start, whole process, median of 15 (interleaved)", rows)


if __name__ == "__main__":
    main()
