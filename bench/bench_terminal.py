"""What escaping text for the terminal costs, at growing sizes.

Issue 11, item 21: every text printed for people goes through `terminal_safe`. The
baseline, measured in the same run, is encoding the same text to UTF-8 (what
printing it costs at the least). Clean text (the usual case: one regex search) and
text with an escape sequence every 100 characters are measured.
Run: `python bench/bench_terminal.py`.
"""

from __future__ import annotations

from _timing import median_seconds, report

from assembler.text import terminal_safe

SIZES = [1_000, 10_000, 100_000, 1_000_000]
LINE = "def shipping_fee(weight_kg): return 4.99 + 1.5 * weight_kg  # ünïcødé\n"


def text(size: int, *, hostile: bool) -> str:
    chunk = LINE if not hostile else LINE[:90] + "\x1b[2J" + "\n"
    return (chunk * (size // len(chunk) + 1))[:size]


if __name__ == "__main__":
    rows = []
    for size in SIZES:
        repeat = max(5, 2_000_000 // size)
        for hostile in (False, True):
            sample = text(size, hostile=hostile)
            base = median_seconds(lambda s=sample: s.encode("utf-8"), repeat=repeat)
            ours = median_seconds(lambda s=sample: terminal_safe(s), repeat=repeat)
            kind = "escapes" if hostile else "clean"
            rows.append(
                (
                    f"{size:>9,} characters, {kind}",
                    f"{ours * 1e6:9.1f} µs, {ours / base:5.1f}x UTF-8 encoding ({base * 1e6:.1f} µs)",
                )
            )
    report("terminal_safe at growing sizes", rows)
