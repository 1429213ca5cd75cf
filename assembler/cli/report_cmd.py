"""`assemble report`: a session or an eval results file as one self-contained HTML
file (no script, no external request), for CI artifacts and pull requests."""

from __future__ import annotations

from pathlib import Path

import click

from assembler.errors import UsageError
from assembler.files import atomic_write


@click.command(
    epilog="\b\nExample:\n"
    "  assemble eval evals/shipping.eval.yaml --trust --only 'fix-*' --out before.jsonl\n"
    "  assemble eval evals/shipping.eval.yaml --trust --out after.jsonl\n"
    "  assemble report after.jsonl --compare before.jsonl -o report.html",
)
@click.argument("target", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--compare", "old", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="An older results file: show what got better or worse.")  # fmt: skip
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="The HTML file to write.")  # fmt: skip
def report(target: Path, old: Path | None, output: Path) -> None:
    """Write TARGET (a session file or eval results) as one HTML file."""
    from assembler.view.report import build_report

    text = build_report(target, old)
    try:
        atomic_write(output, text.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from exc
    click.echo(f"report: {output}")
