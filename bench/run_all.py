"""Run every benchmark in this folder, one after the other: `python bench/run_all.py`.

Each prints its figures as ratios against a baseline measured in the same run; the
latest results are summarised in bench/README.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"\n# {script.name}", flush=True)
        if subprocess.run([sys.executable, str(script)], cwd=HERE.parent, check=False).returncode:
            failed.append(script.name)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")
