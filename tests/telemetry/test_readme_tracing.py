"""The README's tracing example runs as shown and prints the spans it promises.

In a subprocess: the example sets the process-wide tracer provider, which the rest of
the suite must not inherit."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_tracing_example_prints_the_genai_spans(shipping: Path) -> None:
    section = README.read_text("utf-8").split("## Tracing with OpenTelemetry", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    script = shipping / "traced.py"
    script.write_text(code.group(1).replace("/tmp/demo", str(shipping)))  # the copy
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=shipping,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    # ConsoleSpanExporter prints one JSON object per span
    spans = [json.loads(chunk) for chunk in re.findall(r"^\{\n.*?^\}$", done.stdout, re.S | re.M)]
    names = [span["name"] for span in spans]
    assert names[-1] == "invoke_agent shipping-fixer"
    assert names.count("chat shipping-fixer.script.yaml") == 6
    assert {"execute_tool bash", "execute_tool read", "execute_tool edit"} <= set(names)
    blocked = [span for span in spans if span["name"] == "execute_tool edit" and span["events"]]
    assert [event["name"] for event in blocked[0]["events"]] == ["assembler.tool_call.blocked"]
    assert blocked[0]["events"][0]["attributes"]["assembler.blocked_by"] == "protect_tests"
