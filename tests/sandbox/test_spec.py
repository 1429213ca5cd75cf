"""The `sandbox:` block as data: hosts, paths, what a sub-agent inherits, what widens."""

from __future__ import annotations

from pathlib import Path

import pytest

from assembler.sandbox.spec import DEFAULT_HIDDEN, HostRule, SandboxSpec, for_child


def spec(**raw: object) -> SandboxSpec:
    return SandboxSpec.from_data({"filesystem": "workspace-write", **raw})


def test_yaml_booleans_mean_off_and_on() -> None:
    # `network: off` unquoted is `false` to YAML; it must still mean "off".
    assert SandboxSpec.from_data({"filesystem": False, "network": True}).network == "on"
    assert SandboxSpec.from_data({"filesystem": False}).filesystem == "off"
    assert SandboxSpec.from_data({"filesystem": "read-only", "network": False}).network == "off"


def test_network_defaults_to_off_unless_the_filesystem_is_off() -> None:
    assert spec().network == "off"
    assert SandboxSpec.from_data({"filesystem": "off"}).network == "on"
    assert not SandboxSpec.from_data({"filesystem": "off"}).confines


@pytest.mark.parametrize(
    ("rule", "host", "port", "allowed"),
    [
        ("pypi.org:443", "pypi.org", 443, True),
        ("pypi.org:443", "pypi.org", 80, False),
        ("pypi.org:443", "evil.pypi.org", 443, False),
        ("pypi.org", "PyPI.org.", 80, True),
        ("pypi.org", "pypi.org", 8080, False),
        ("*.pythonhosted.org", "files.pythonhosted.org", 443, True),
        ("*.pythonhosted.org", "pythonhosted.org", 443, False),
        ("*.pythonhosted.org", "files.pythonhosted.org.evil.com", 443, False),
        ("127.0.0.1:8000", "127.0.0.1", 8000, True),
    ],
)
def test_host_rules(rule: str, host: str, port: int, allowed: bool) -> None:
    assert HostRule.parse(rule).matches(host, port) is allowed


@pytest.mark.parametrize("bad", ["", "pypi.org:0", "pypi.org:70000", "pypi.org:x", "a b", "-x.org"])
def test_bad_host_rules_say_what_is_wrong(bad: str) -> None:
    with pytest.raises(ValueError, match=r"host name|port"):
        HostRule.parse(bad)


def test_paths_resolve_against_the_workspace_and_home(tmp_path: Path) -> None:
    (tmp_path / "ws" / "build").mkdir(parents=True)
    reach = spec(writable=["build", "~/.cache/pip", "/srv/x"], hidden=["~/.config/mine"]).resolve(
        tmp_path / "ws", home=str(tmp_path / "home")
    )
    assert reach.writable == (
        str(tmp_path / "ws"),
        str(tmp_path / "ws" / "build"),
        str(tmp_path / "home" / ".cache" / "pip"),
        "/srv/x",
    )
    assert reach.hidden[0] == str(tmp_path / "home" / ".ssh")
    assert reach.hidden[-1] == str(tmp_path / "home" / ".config" / "mine")
    assert len(reach.hidden) == len(DEFAULT_HIDDEN) + 1


def test_read_only_writes_no_workspace(tmp_path: Path) -> None:
    assert spec(filesystem="read-only").resolve(tmp_path).writable == ()


def test_a_child_without_a_block_inherits_the_parents_paths(tmp_path: Path) -> None:
    parent = spec(writable=["out"])
    child, problems = for_child(parent, tmp_path / "lead", None, tmp_path / "elsewhere")
    assert problems == []
    assert child is not None
    # `workspace-write` and `out` still mean the parent's workspace
    assert child.resolve(tmp_path / "elsewhere").writable == (
        str(tmp_path / "lead"),
        str(tmp_path / "lead" / "out"),
    )


@pytest.mark.parametrize(
    ("parent", "child", "problem"),
    [
        ({"filesystem": "read-only"}, {}, "`filesystem: workspace-write` is wider"),
        ({}, {"filesystem": "off"}, "`filesystem: off` is wider"),
        ({}, {"network": "on"}, "`network: on` is wider"),
        ({}, {"writable": ["/srv"]}, "it may write /srv"),
        (
            {"network": "allow", "allow_hosts": ["pypi.org:443"]},
            {"network": "allow", "allow_hosts": ["pypi.org:443", "evil.com"]},
            "evil.com",
        ),
    ],
)
def test_a_child_that_widens_is_named(
    tmp_path: Path, parent: dict[str, object], child: dict[str, object], problem: str
) -> None:
    _, problems = for_child(spec(**parent), tmp_path, spec(**child), tmp_path)
    assert any(problem in p for p in problems), problems


def test_a_child_that_narrows_keeps_its_own_and_the_parents_hidden(tmp_path: Path) -> None:
    parent = spec(network="allow", allow_hosts=["*.example.com"], hidden=["~/.parent-secret"])
    child_spec = spec(filesystem="read-only", network="allow", allow_hosts=["api.example.com:443"])
    child, problems = for_child(parent, tmp_path, child_spec, tmp_path)
    assert problems == []
    assert child is not None and child.filesystem == "read-only"
    assert "~/.parent-secret" in child.hidden


def test_an_unconfined_parent_leaves_the_child_its_own(tmp_path: Path) -> None:
    own = spec()
    assert for_child(None, tmp_path, own, tmp_path) == (own, [])
    off = SandboxSpec.from_data({"filesystem": "off"})
    assert for_child(off, tmp_path, None, tmp_path) == (None, [])


def test_an_inherited_anchor_moves_with_an_evaluation_copy(tmp_path: Path) -> None:
    inherited = spec().inherited_by(tmp_path / "ws")
    moved = inherited.moved(tmp_path / "ws", tmp_path / "copy")
    assert moved.anchor == tmp_path / "copy"
    assert spec().moved(tmp_path / "ws", tmp_path / "copy") == spec()
