"""`assemble validate`: one manifest as a whole process, and 1,000 in one process.

Targets (issue 2): the process within 1.5x of `python -c "import yaml, jsonschema,
jinja2, click"` measured in the same run; under 2 ms per manifest in one process.
Run: `python bench/bench_validate.py`.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import yaml
from _timing import REPO, assemble, baseline_imports, process_medians, report

from assembler.validation.validator import validate_file


def whole_process() -> None:
    medians = process_medians(
        {
            "baseline: python -c 'import yaml, jsonschema, jinja2, click'": baseline_imports(),
            "assemble validate agents/shipping-fixer.yaml": assemble(
                "validate", "agents/shipping-fixer.yaml"
            ),
        }
    )
    (base_name, base), (name, ours) = medians.items()
    report(
        "validate one manifest, whole process (median of 15)",
        [
            (base_name, f"{base * 1000:.1f} ms"),
            (name, f"{ours * 1000:.1f} ms"),
            ("ratio", f"{ours / base:.2f}x (target <= 1.5x)"),
        ],
    )


def thousand_in_process() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        shutil.copytree(REPO / "agents", root / "agents")
        shutil.copytree(REPO / "examples", root / "examples")
        source = (root / "agents" / "shipping-fixer.yaml").read_text()
        files = []
        for i in range(1000):
            path = root / "agents" / f"generated-{i:04d}.yaml"
            path.write_text(source.replace("name: shipping-fixer", f"name: agent-{i:04d}"))
            files.append(path)
        validate_file(files[0])  # compile the validator, warm imports
        start = time.perf_counter()
        for path in files:
            report_ = validate_file(path)
            assert not report_.has_errors, report_.issues
        ours = (time.perf_counter() - start) / len(files)
        start = time.perf_counter()
        for path in files:
            yaml.load(path.read_text(), Loader=yaml.SafeLoader)
        baseline = (time.perf_counter() - start) / len(files)
    report(
        "validate 1,000 manifests in one process",
        [
            (
                "baseline: PyYAML SafeLoader reading each file, nothing else",
                f"{baseline * 1000:.3f} ms/manifest",
            ),
            (
                "validate_file (YAML + schema + all checks + skills)",
                f"{ours * 1000:.3f} ms/manifest (target < 2 ms)",
            ),
            ("ratio", f"{ours / baseline:.2f}x"),
        ],
    )


if __name__ == "__main__":
    whole_process()
    thousand_in_process()
