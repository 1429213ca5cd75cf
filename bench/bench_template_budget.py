"""What the render budget costs (issue 11, item 15): the default tools template,
rendered through the budgeted sandbox (every loop iteration and call counted), against
the same template in a plain Jinja2 `SandboxedEnvironment` in the same run, at 10,
100 and 1,000 tools. Run: `python bench/bench_template_budget.py`."""

from __future__ import annotations

from _timing import median_seconds, report
from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

from assembler.prompt.templates import compile_template, default_template_text, render_template
from assembler.tools.registry import ToolEntry


def main() -> None:
    text = default_template_text("tools")
    budgeted = compile_template(text)
    plain = SandboxedEnvironment(undefined=StrictUndefined).from_string(text)
    rows = []
    per_tool: dict[int, float] = {}
    for size in (10, 100, 1000):
        variables = {
            "tools": tuple(ToolEntry(f"tool_{i}", f"does thing {i}", "") for i in range(size)),
            "guidelines": tuple(f"guideline {i}" for i in range(10)),
        }
        assert render_template(budgeted, variables, "bench") == plain.render(variables)
        repeat = 200 if size < 1000 else 40
        base = median_seconds(lambda v=variables: plain.render(v), repeat=repeat)
        measured = median_seconds(
            lambda v=variables: render_template(budgeted, v, "bench"), repeat=repeat
        )
        per_tool[size] = measured / size
        rows.append(
            (
                f"{size:>5} tools",
                f"plain sandbox {base * 1e6:9.1f} µs | budgeted {measured * 1e6:9.1f} µs | "
                f"{measured / base:.2f}x",
            )
        )
    growth = per_tool[1000] / per_tool[10]
    rows.append(
        ("per tool, 1,000 vs 10", f"{growth:.2f}x ({'linear' if growth < 1.5 else 'super-linear'})")
    )
    report("render budget: default tools template", rows)


if __name__ == "__main__":
    main()
