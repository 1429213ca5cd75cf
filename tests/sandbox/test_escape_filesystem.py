"""Issue 22's escape corpus, the file system: every way out of the workspace, refused.

Each case is first run unconfined and must succeed there (so the test can fail), then
in `filesystem: workspace-write`, where nothing outside may change.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from escapes import Place, escape_is_refused, needs_landlock, needs_seccomp, run

pytestmark = [needs_landlock, needs_seccomp]


def marker(place: Place) -> Path:
    return place.outside / "escaped"


def test_writing_outside_directly(place: Place) -> None:
    result = escape_is_refused(place, f"echo x > {marker(place)}", lambda: marker(place).exists())
    assert result.is_error
    assert "Permission denied" in result.content
    assert "[sandbox:" in result.content  # the model is told the sandbox refused it


def test_writing_through_dot_dot(place: Place) -> None:
    escape_is_refused(place, "echo x > ../outside/escaped", lambda: marker(place).exists())


def test_writing_through_a_symlink_the_command_creates(place: Place) -> None:
    escape_is_refused(
        place,
        "ln -s ../outside door && echo x > door/escaped",
        lambda: marker(place).exists(),
    )


def test_writing_through_a_hard_link(place: Place) -> None:
    def setup(outside: Path) -> None:
        (outside / "victim").write_text("original\n")

    place.setup = setup
    victim = place.outside / "victim"
    result = escape_is_refused(
        place,
        f"ln {victim} here && echo changed >> here",
        lambda: victim.read_text() != "original\n",
    )
    assert "Invalid cross-device link" in result.content


def test_writing_through_proc_self_cwd(place: Place) -> None:
    escape_is_refused(
        place, "echo x > /proc/self/cwd/../outside/escaped", lambda: marker(place).exists()
    )


def test_writing_through_proc_self_root(place: Place) -> None:
    escape_is_refused(
        place, f"echo x > /proc/self/root{marker(place)}", lambda: marker(place).exists()
    )


def test_renaming_a_directory_into_the_workspace(place: Place) -> None:
    def setup(outside: Path) -> None:
        (outside / "tree").mkdir()
        (outside / "tree" / "file").write_text("original\n")

    place.setup = setup
    tree = place.outside / "tree"
    escape_is_refused(
        place,
        "mv ../outside/tree moved && echo changed > moved/file",
        lambda: not tree.exists() or (tree / "file").read_text() != "original\n",
    )


def test_renaming_the_workspace_away(place: Place) -> None:
    # Moving the workspace out from under its own rule, then writing beside it.
    escape_is_refused(
        place,
        "cd .. && mv ws outside/ws-moved && echo x > outside/escaped",
        lambda: marker(place).exists() or (place.outside / "ws-moved").exists(),
    )


@pytest.mark.parametrize(
    "launch",
    [
        "setsid -f sh -c 'echo x > {target}' > /dev/null 2>&1",
        "nohup sh -c 'echo x > {target}' > /dev/null 2>&1 &",
        "( ( sh -c 'sleep 0.1; echo x > {target}' > /dev/null 2>&1 & ) & )",
    ],
    ids=["setsid", "nohup", "double-fork"],
)
def test_a_detached_grandchild(place: Place, launch: str) -> None:
    command = launch.format(target=marker(place)) + "\nsleep 0.5"
    escape_is_refused(place, command, lambda: marker(place).exists(), settle=0.5)


def test_python(place: Place) -> None:
    command = f"python3 -c \"open('{marker(place)}', 'w').write('x')\""
    result = escape_is_refused(place, command, lambda: marker(place).exists())
    assert "PermissionError" in result.content


@pytest.mark.skipif(shutil.which("perl") is None, reason="needs perl")
def test_perl(place: Place) -> None:
    command = f'perl -e \'open(F, ">{marker(place)}") or die "$!\\n"; print F "x"\''
    escape_is_refused(place, command, lambda: marker(place).exists())


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_a_makefile(place: Place) -> None:
    recipe = f"all:\n\techo x > {marker(place)}\n"
    command = f"printf '{recipe}' > Makefile && make"
    escape_is_refused(place, command, lambda: marker(place).exists())


def test_the_workspace_and_tmpdir_stay_writable(place: Place) -> None:
    place.reset()
    result = run(
        place.boxed(),
        "echo a > inside && mkdir -p d/e && mv inside d/e/moved && ln -s d link && "
        "echo b > $TMPDIR/scratch && cat d/e/moved $TMPDIR/scratch && rm -r d link",
    )
    assert result.content == "a\nb", result.content
    assert not result.is_error


def test_read_only_writes_nothing_but_tmpdir(place: Place) -> None:
    place.reset()
    result = run(
        place.boxed(filesystem="read-only"), "echo x > $TMPDIR/ok && echo y > in-workspace"
    )
    assert result.is_error
    assert "Permission denied" in result.content
    assert not (place.ws / "in-workspace").exists()


def test_writable_adds_a_directory(place: Place) -> None:
    place.reset()
    result = run(place.boxed(writable=[str(place.outside)]), f"echo x > {marker(place)}")
    assert not result.is_error, result.content
    assert marker(place).read_text() == "x\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can mount in the control")
def test_root_gives_up_its_capabilities(place: Place) -> None:
    # As root, `mount` would put anything anywhere; in the sandbox it is refused.
    target = place.outside / "mnt"
    target.mkdir()
    control = run(place.plain(), f"mount -t tmpfs none {target}")
    try:
        assert os.path.ismount(target), control.content
    finally:
        subprocess.run(["umount", str(target)], check=False)
    result = run(place.boxed(), f"mount -t tmpfs none {target}")
    assert result.is_error
    assert not os.path.ismount(target)
    assert "permission denied" in result.content.lower()
