"""`assemble view`: a local web page over session files, audit traces and eval results.

It only reads files (see `assembler.view`): no agent is built, no project code is
imported, no process is started. The server listens on 127.0.0.1 only, and every
request must carry the random token of the printed URL.
"""

from __future__ import annotations

import webbrowser
from pathlib import Path

import click

from assembler.errors import UsageError
from assembler.user_dirs import default_data_dir


@click.command(
    epilog="\b\nExample:\n  assemble view\n"
    "  assemble eval evals/shipping.eval.yaml --trust --out results.jsonl\n"
    "  assemble view --open results.jsonl",
)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, exists=True))
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: a free one).")  # fmt: skip
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
def view(paths: tuple[Path, ...], port: int, open_browser: bool) -> None:
    """Look at sessions and eval results in a browser.

    PATHS are directories of session files (default: the data directory, where `run`
    records sessions) and eval results files (`assemble eval --out`). Live sessions
    update as they run. Stop with Ctrl-C.
    """
    from assembler.view.results import looks_like_results
    from assembler.view.server import make_server

    roots = [p for p in paths if p.is_dir()]
    results = [p for p in paths if p.is_file()]
    for path in results:
        if not looks_like_results(path):
            raise UsageError(
                f"{path} is not an eval results file; give session files by their directory"
            )
    if not roots:  # the sessions `run` records, beside any results given
        roots = [default_data_dir()]
    try:
        server = make_server(
            [r.resolve() for r in roots], [r.resolve() for r in results], port=port
        )
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from exc
    click.echo(f"assemble view: {server.url}")
    click.echo("Only this machine can connect, and only with the token. Ctrl-C stops.", err=True)
    if open_browser:
        webbrowser.open(server.url)
    try:
        server.serve_forever(poll_interval=0.25)
    except KeyboardInterrupt:
        click.echo("stopped", err=True)
    finally:
        server.stopping.set()
        server.server_close()
