"""The waiting indicator of `run -p` (`cli/spinner.py`): what a frame says, and that it
erases itself."""

from __future__ import annotations

import io

from assembler.cli.spinner import Spinner


def test_a_frame_says_what_it_waits_for_and_for_how_long() -> None:
    stream = io.StringIO()
    spinner = Spinner(stream)
    spinner.draw()
    assert stream.getvalue() == "\r| waiting for the model"  # under a second: no count
    spinner.touch("running bash")
    spinner.last -= 12.5  # as if nothing had happened for 12.5 s
    spinner.draw()
    assert stream.getvalue().endswith("\r/ running bash (12s)")
    spinner.clear()
    assert stream.getvalue().endswith("\r" + " " * len("/ running bash (12s)") + "\r")
    assert spinner.drawn == 0
