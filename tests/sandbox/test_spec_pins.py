"""Pins for the `sandbox:` block (`sandbox/spec.py`): the credential stores every sandbox
hides, the ports a host rule takes, and what a sub-agent's block may not widen (with the
words `validate` says it in). Each was a mutant no test noticed (issue 28, round 3).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assembler.sandbox.spec import HostRule, SandboxSpec, for_child

CREDENTIAL_STORES = (
    ".ssh", ".aws", ".azure", ".config/gcloud", ".config/gh", ".docker", ".kube", ".gnupg",
    ".password-store", ".netrc", ".git-credentials", ".npmrc", ".pypirc",
    ".cargo/credentials", ".cargo/credentials.toml", ".vault-token", ".local/share/keyrings",
)  # fmt: skip
"""What README promises every sandbox hides (its list ends in "..."; this is all of it)."""


def spec(**raw: object) -> SandboxSpec:
    return SandboxSpec.from_data({"filesystem": "workspace-write", **raw})


def test_every_credential_store_is_hidden_under_the_home_given(tmp_path: Path) -> None:
    home = tmp_path / "home"
    hidden = spec().resolve(tmp_path / "ws", home=str(home)).hidden
    assert hidden == tuple(str(home / store) for store in CREDENTIAL_STORES)


def test_the_credential_stores_are_the_users_when_no_home_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    hidden = spec(hidden=["~", "~/.config/mine"]).resolve(tmp_path / "ws").hidden
    assert str(tmp_path / "me" / ".ssh") in hidden
    assert hidden[-2:] == (str(tmp_path / "me"), str(tmp_path / "me" / ".config" / "mine"))


@pytest.mark.parametrize(
    ("filesystem", "network", "confines"),
    [
        ("read-only", "on", True),
        ("workspace-write", "on", True),
        ("off", "off", True),
        ("off", "allow", True),
        ("off", "on", False),
    ],
)
def test_only_off_and_on_together_confine_nothing(
    filesystem: str, network: str, confines: bool
) -> None:
    block = SandboxSpec.from_data({"filesystem": filesystem, "network": network})
    assert block.confines is confines


def test_the_python_tools_a_reviewer_accepted_unconfined_are_kept() -> None:
    assert spec(unconfined=["pkg.mod:run"]).unconfined == ("pkg.mod:run",)


@pytest.mark.parametrize(
    ("rule", "port"), [("pypi.org:1", 1), ("pypi.org:65535", 65535), ("PyPI.org:443", 443)]
)
def test_a_host_rule_takes_every_port_from_1_to_65535(rule: str, port: int) -> None:
    assert HostRule.parse(rule) == HostRule("pypi.org", port)
    assert str(HostRule.parse(rule)) == f"pypi.org:{port}"


@pytest.mark.parametrize("rule", ["pypi.org:0", "pypi.org:65536"])
def test_a_host_rule_refuses_a_port_outside_1_to_65535(rule: str) -> None:
    with pytest.raises(ValueError, match="the port must be a number from 1 to 65535"):
        HostRule.parse(rule)


def widening(tmp_path: Path, parent: dict[str, object], child: dict[str, object]) -> list[str]:
    return for_child(spec(**parent), tmp_path, spec(**child), tmp_path)[1]


ALLOW = {"network": "allow"}


@pytest.mark.parametrize(
    ("parent_hosts", "child_hosts"),
    [
        (["pypi.org:443"], ["pypi.org:443"]),
        (["pypi.org"], ["pypi.org:443", "pypi.org"]),
        (["*.example.com"], ["*.example.com", "a.b.example.com:80"]),
    ],
)
def test_a_child_may_keep_or_narrow_its_parents_hosts(
    tmp_path: Path, parent_hosts: list[str], child_hosts: list[str]
) -> None:
    parent = {**ALLOW, "allow_hosts": parent_hosts}
    assert widening(tmp_path, parent, {**ALLOW, "allow_hosts": child_hosts}) == []


@pytest.mark.parametrize(
    ("parent_hosts", "child_host"),
    [
        (["pypi.org"], "xpypi.org"),  # a longer name is another host
        (["*.example.com"], "evilexample.com"),  # a subdomain needs its dot
        (["*.example.com"], "example.com"),
        (["pypi.org:443"], "pypi.org:8080"),
        (["pypi.org:443"], "pypi.org"),  # ports 80 and 443: wider than 443
    ],
)
def test_a_child_that_adds_a_host_is_named_in_the_words_validate_shows(
    tmp_path: Path, parent_hosts: list[str], child_host: str
) -> None:
    parent = {**ALLOW, "allow_hosts": parent_hosts}
    problems = widening(tmp_path, parent, {**ALLOW, "allow_hosts": [child_host]})
    assert problems == [f"`allow_hosts` has {child_host}, which the parent does not allow"]


def test_a_child_may_write_below_what_its_parent_may_write(tmp_path: Path) -> None:
    (tmp_path / "build" / "sub").mkdir(parents=True)
    parent = {"writable": ["/", "build"]}
    assert widening(tmp_path, {"writable": ["build"]}, {"writable": ["build/sub"]}) == []
    assert widening(tmp_path, parent, {"writable": ["/srv/x"]}) == []


def test_a_child_may_not_write_a_sibling_that_shares_a_prefix(tmp_path: Path) -> None:
    # `lead-other` starts with the text `lead` but is not inside it
    parent_ws, child_ws = tmp_path / "lead", tmp_path / "lead-other"
    for directory in (parent_ws, child_ws):
        directory.mkdir()
    _, problems = for_child(spec(), parent_ws, spec(), child_ws)
    assert problems == [f"it may write {child_ws}, which the parent may not"]


@pytest.mark.parametrize(
    ("parent", "child", "problem"),
    [
        (
            {"filesystem": "read-only"},
            {},
            "`filesystem: workspace-write` is wider than `read-only`",
        ),
        ({}, {"network": "on"}, "`network: on` is wider than `off`"),
    ],
)
def test_a_wider_block_is_named_in_the_words_validate_shows(
    tmp_path: Path, parent: dict[str, object], child: dict[str, object], problem: str
) -> None:
    assert widening(tmp_path, parent, child) == [problem]


def test_a_child_keeps_the_parents_relative_hidden_paths_where_the_parent_meant_them(
    tmp_path: Path,
) -> None:
    parent = spec(hidden=["secrets", "~/.mine", "/srv/keys"])
    child, _ = for_child(parent, tmp_path / "lead", spec(), tmp_path / "child")
    assert child is not None
    assert child.hidden == (os.path.join(tmp_path, "lead", "secrets"), "~/.mine", "/srv/keys")
    inherited = parent.inherited_by(tmp_path / "lead")  # a grandchild's parent: anchored
    grandchild, _ = for_child(inherited, tmp_path / "child", spec(), tmp_path / "g")
    assert grandchild is not None
    assert grandchild.hidden[0] == os.path.join(tmp_path, "lead", "secrets")


def test_a_child_under_an_unconfined_part_of_its_parent_may_confine_itself(
    tmp_path: Path,
) -> None:
    # the parent confines the network only: any file system block narrows `off`
    assert widening(tmp_path, {"filesystem": "off", "network": "off"}, {"network": "off"}) == []
    # the parent confines files only: any network block narrows `on`
    child = {**ALLOW, "allow_hosts": ["pypi.org"]}
    assert widening(tmp_path, {"network": "on"}, child) == []
