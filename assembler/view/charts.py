"""Charts as SVG drawn on the server: no script, no external file, the same markup in
the live view and in a report. Labels are untrusted text (task names come from eval
files), so each one goes through `escape`; numbers are formatted here.

SVG presentation attributes (`fill`, `width`) are used instead of `style`, which the
Content-Security-Policy (no inline styles) would block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from assembler.view.html import Safe, escape

INPUT, OUTPUT, CACHE = "#4c78a8", "#f58518", "#9ecae9"
PASS, FAIL, BEFORE = "#54a24b", "#e45756", "#bab0ac"
MAX_BARS = 240


@dataclass(frozen=True)
class TurnUsage:
    label: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0


def per_turn(values: Sequence[tuple[int, int, int]]) -> list[TurnUsage]:
    """Bars from (input, output, cache read) per turn: at most `MAX_BARS`, consecutive
    turns added up when there are more (a long session stays one readable chart)."""
    size = max(1, -(-len(values) // MAX_BARS))
    bars = []
    for start in range(0, len(values), size):
        chunk = values[start : start + size]
        label = str(start + 1) if size == 1 else f"{start + 1}-{start + len(chunk)}"
        bars.append(
            TurnUsage(
                label,
                sum(v[0] for v in chunk),
                sum(v[1] for v in chunk),
                sum(v[2] for v in chunk),
            )
        )
    return bars


def usage_chart(turns: Sequence[TurnUsage], *, width: int = 900, height: int = 180) -> Safe:
    """Input and output tokens per turn, stacked; cache reads as a lighter part of the
    input. A title on each bar gives the figures."""
    if not any(t.input_tokens or t.output_tokens for t in turns):
        return Safe("")
    bars = (
        turns
        if len(turns) <= MAX_BARS
        else per_turn([(t.input_tokens, t.output_tokens, t.cache_read_tokens) for t in turns])
    )
    top = max((t.input_tokens + t.output_tokens) for t in bars) or 1
    plot_h = height - 30
    step = (width - 60) / len(bars)
    bar_w = max(1.0, step * 0.8)
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>tokens per turn (highest {top:,})</title>",
        f'<line x1="50" y1="{plot_h}" x2="{width - 5}" y2="{plot_h}" stroke="#999"/>',
        f'<text x="45" y="12" text-anchor="end" font-size="10" fill="#555">{top:,}</text>',
        f'<text x="45" y="{plot_h}" text-anchor="end" font-size="10" fill="#555">0</text>',
    ]
    for number, turn in enumerate(bars):
        x = 55 + number * step
        in_h = turn.input_tokens / top * (plot_h - 5)
        out_h = turn.output_tokens / top * (plot_h - 5)
        cached_h = min(turn.cache_read_tokens, turn.input_tokens) / top * (plot_h - 5)
        label = escape(
            f"turn {turn.label}: {turn.input_tokens:,} in ({turn.cache_read_tokens:,} cached), "
            f"{turn.output_tokens:,} out"
        )
        parts.append(f"<g><title>{label}</title>")
        parts.append(
            f'<rect x="{x:.1f}" y="{plot_h - in_h:.1f}" width="{bar_w:.1f}" '
            f'height="{in_h:.1f}" fill="{INPUT}"/>'
        )
        if cached_h:
            parts.append(
                f'<rect x="{x:.1f}" y="{plot_h - cached_h:.1f}" width="{bar_w:.1f}" '
                f'height="{cached_h:.1f}" fill="{CACHE}"/>'
            )
        parts.append(
            f'<rect x="{x:.1f}" y="{plot_h - in_h - out_h:.1f}" width="{bar_w:.1f}" '
            f'height="{out_h:.1f}" fill="{OUTPUT}"/></g>'
        )
    legend_y = height - 8
    for offset, (name, colour) in enumerate(
        (("input", INPUT), ("cache read", CACHE), ("output", OUTPUT))
    ):
        x = 55 + offset * 110
        parts.append(f'<rect x="{x}" y="{legend_y - 9}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 14}" y="{legend_y}" font-size="11">{name}</text>')
    parts.append("</svg>")
    return Safe("".join(parts))


@dataclass(frozen=True)
class RateBar:
    label: str
    rate: float
    """0..1"""
    before: float | None = None
    detail: str = ""


def rate_chart(rows: Sequence[RateBar], *, width: int = 900) -> Safe:
    """Pass rate per task as horizontal bars; with `before`, a thin grey bar above each
    shows the older file's rate."""
    if not rows:
        return Safe("")
    row_h = 26 if any(r.before is not None for r in rows) else 20
    label_w = 230
    bar_max = width - label_w - 70
    height = row_h * len(rows) + 10
    parts = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg"><title>pass rate per task</title>'
    ]
    for number, row in enumerate(rows):
        y = 5 + number * row_h
        label = str(row.label)
        shown = label if len(label) <= 34 else label[:33] + "…"
        colour = PASS if row.rate >= 1 else (FAIL if row.rate == 0 else "#eeca3b")
        title = escape(f"{label}: {row.rate:.0%}" + (f" ({row.detail})" if row.detail else ""))
        parts.append(f"<g><title>{title}</title>")
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" font-size="12">'
            f"{escape(shown)}</text>"
        )
        bar_y = y
        if row.before is not None:
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{max(row.before * bar_max, 1):.1f}" '
                f'height="5" fill="{BEFORE}"/>'
            )
            bar_y = y + 7
        parts.append(
            f'<rect x="{label_w}" y="{bar_y}" width="{max(row.rate * bar_max, 1):.1f}" '
            f'height="14" fill="{colour}"/>'
        )
        parts.append(
            f'<text x="{label_w + max(row.rate * bar_max, 1) + 6:.1f}" y="{bar_y + 12}" '
            f'font-size="11">{row.rate:.0%}</text></g>'
        )
    parts.append("</svg>")
    return Safe("".join(parts))
