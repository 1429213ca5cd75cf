"""Typed output: validating an answer against its schema, at growing sizes.

Target (issue 24): a 1 MB answer against a 200-property schema is checked in under
5 ms, with the schema compiled once per agent, not per turn. Reported against
`json.loads` of the same text, measured in the same run: parsing is a cost every
answer pays anyway, so the ratio is what the check adds. Two series: the answer's
size at 200 properties (10 KB, 100 KB, 1 MB, 4 MB: the largest accepted), and the
schema's size at about 1 MB (10, 200, 1,000 properties). Compiling the contract (what
building the agent pays, once) is shown beside them. Run: `python bench/bench_typed.py`.
"""

from __future__ import annotations

import json
from typing import Any

from _timing import median_seconds, report

from assembler.typed.output import OutputContract
from assembler.typed.schemas import compile_schema

KINDS = ("string", "integer", "array", "enum")


def schema(properties: int) -> dict[str, Any]:
    """An object schema of `properties` properties of four kinds, all required."""
    shapes = {
        "string": {"type": "string", "maxLength": 10_000_000},
        "integer": {"type": "integer", "minimum": 0},
        "array": {"type": "array", "items": {"type": "string"}},
        "enum": {"enum": ["low", "medium", "high"]},
    }
    names = [f"field_{i}" for i in range(properties)]
    return {
        "type": "object",
        "required": names,
        "additionalProperties": False,
        "properties": {n: shapes[KINDS[i % 4]] for i, n in enumerate(names)},
    }


def answer(properties: int, size: int) -> str:
    """A valid answer of about `size` bytes of JSON: the text is spread over the
    string and array properties."""
    texts = sum(1 for i in range(properties) if KINDS[i % 4] in ("string", "array"))
    chunk = max(1, size // max(texts, 1))
    value: dict[str, Any] = {}
    for i in range(properties):
        kind = KINDS[i % 4]
        if kind == "string":
            value[f"field_{i}"] = "x" * chunk
        elif kind == "integer":
            value[f"field_{i}"] = i
        elif kind == "array":
            value[f"field_{i}"] = ["y" * 60] * max(1, chunk // 64)
        else:
            value[f"field_{i}"] = "medium"
    return json.dumps(value)


def measure(properties: int, size: int) -> dict[str, float]:
    text = answer(properties, size)
    contract = OutputContract(schema(properties))
    assert contract.from_text(text).valid
    repeat = 20 if len(text) > 2_000_000 else 60
    value = json.loads(text)
    plain = compile_schema(schema(properties)).validator  # jsonschema alone
    return {
        "bytes": len(text),
        "validate": median_seconds(lambda: contract.check(value), repeat=repeat),
        "jsonschema": median_seconds(lambda: plain.is_valid(value), repeat=max(3, repeat // 10)),
        "parse": median_seconds(lambda: json.loads(text), repeat=repeat),
        "check": median_seconds(lambda: contract.from_text(text), repeat=repeat),
        "compile": median_seconds(lambda: OutputContract(schema(properties)), repeat=20),
    }


def main() -> None:
    rows = []
    for properties, size in (
        (200, 10_000),
        (200, 100_000),
        (200, 1_000_000),
        (200, 4_000_000),
        (10, 1_000_000),
        (1000, 1_000_000),
    ):
        m = measure(properties, size)
        added = m["check"] - m["parse"]
        rows.append(
            (
                f"{properties} properties, {m['bytes'] / 1e6:.2f} MB",
                f"validate {m['validate'] * 1e3:.3f} ms (jsonschema alone "
                f"{m['jsonschema'] * 1e3:.1f} ms); json.loads {m['parse'] * 1e3:.3f} ms, "
                f"parse + validate {m['check'] * 1e3:.3f} ms ({m['check'] / m['parse']:.2f}x, "
                f"+{added * 1e3:.3f} ms); compile once {m['compile'] * 1e3:.3f} ms",
            )
        )
    report("typed output: parse + validate an answer (OutputContract.from_text)", rows)


if __name__ == "__main__":
    main()
