"""One agent's sandbox at run time, the kernel pieces it is made of, and what a result says."""

from __future__ import annotations

import os
import platform
import struct
from pathlib import Path

import pytest
from escapes import needs_landlock, needs_seccomp

from assembler.sandbox import confine, landlock, seccomp
from assembler.sandbox.denials import denial_note
from assembler.sandbox.policy import Policy
from assembler.sandbox.runtime import Sandbox
from assembler.sandbox.spec import SandboxSpec
from assembler.sandbox.view import describe


@needs_landlock
def test_a_policy_has_a_private_temporary_directory_removed_at_close(tmp_path: Path) -> None:
    sandbox = Sandbox(SandboxSpec("read-only", "off"), tmp_path)
    policy = sandbox.policy()
    temp = policy.env["TMPDIR"]
    assert os.path.isdir(temp) and policy.writable == (temp,)
    assert sandbox.policy().env["TMPDIR"] == temp  # one per agent, not per call
    sandbox.close()
    assert not os.path.exists(temp)
    with pytest.raises(Exception, match="closed"):
        sandbox.policy()


def test_a_policy_survives_the_trip_to_the_supervisor() -> None:
    policy = Policy("workspace-write", "allow", ("/w",), ("/h",), env={"A": "b"}, netns="/n")
    assert Policy.from_dict(__import__("json").loads(policy.to_json())) == policy


def test_describe_shows_hidden_as_written_and_writable_resolved(tmp_path: Path) -> None:
    spec = SandboxSpec("workspace-write", "allow", hidden=("~/.mine",), allow_hosts=("a.org",))
    shown = describe(spec, spec.resolve(tmp_path))
    assert shown["writable"] == [str(tmp_path.resolve()), "$TMPDIR (private)"]
    assert shown["hidden"][-1] == "~/.mine"
    assert shown["allow_hosts"] == ["a.org"]
    assert describe(None, None) == {"filesystem": "off", "network": "on"}


def test_the_note_names_refused_hosts_or_the_reach() -> None:
    shown = {"filesystem": "workspace-write", "network": "off", "writable": ["/w", "$TMPDIR"]}
    note = denial_note(shown, "cat: /x: Permission denied", 1, [])
    assert note is not None and "writable: /w, $TMPDIR" in note and "network: off" in note
    assert denial_note(shown, "all good", 0, []) is None
    assert denial_note(shown, "assertion failed", 1, []) is None  # not the sandbox's doing
    allow = {**shown, "network": "allow", "allow_hosts": ["pypi.org:443"]}
    hosts = denial_note(allow, "", 1, ["evil.com:443"])
    assert hosts is not None and "refused evil.com:443" in hosts and "(pypi.org:443)" in hosts


def test_landlock_rights_grow_with_the_abi() -> None:
    assert landlock.handled_rights(1) == (1 << 13) - 1
    assert landlock.handled_rights(3) & landlock.TRUNCATE
    assert not landlock.handled_rights(4) & landlock.IOCTL_DEV
    assert landlock.handled_rights(5) & landlock.IOCTL_DEV


@needs_landlock
def test_grant_walks_around_hidden_paths(tmp_path: Path) -> None:
    for name in ("a", "b", "secret"):
        (tmp_path / name).mkdir()
    ruleset = landlock.create_ruleset(landlock.handled_rights(landlock.abi()))
    try:
        rules = landlock.grant(ruleset, str(tmp_path), landlock.READ, [str(tmp_path / "secret")])
        assert rules == 2  # a and b: the hidden one and its parent itself get none
        assert landlock.grant(ruleset, str(tmp_path), landlock.READ, []) == 1
    finally:
        os.close(ruleset)


@needs_seccomp
def test_the_filter_kills_foreign_system_call_tables_and_ends_allowing() -> None:
    arch = seccomp.native_arch()
    assert arch is not None
    program = seccomp.build_filter(arch, "off")
    instructions = [struct.unpack("HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    assert instructions[1][3] == arch.audit and instructions[2][3] == seccomp.RET_KILL_PROCESS
    assert instructions[-1] == (0x06, 0, 0, seccomp.RET_ALLOW)
    socket_rule = instructions.index((0x15, 0, 1, arch.socket))
    assert instructions[socket_rule + 1][3] == seccomp.RET_ERRNO | 1  # EPERM
    assert (0x15, 0, 1, arch.socket) not in [
        struct.unpack("HBBI", p) for p in _chunks(seccomp.build_filter(arch, "on"))
    ]


def _chunks(program: bytes) -> list[bytes]:
    return [program[i : i + 8] for i in range(0, len(program), 8)]


def test_allow_without_its_network_cannot_be_prepared() -> None:
    if platform.system() != "Linux":
        pytest.skip("Linux")
    with pytest.raises(confine.ConfineError, match="network namespace"):
        confine.prepare(Policy("off", "allow"))


def test_the_wrapper_says_how_to_call_it(capfd: pytest.CaptureFixture[str]) -> None:
    assert confine.main(["{}"]) == 2
    assert "usage: confine.py POLICY_JSON -- PROGRAM" in capfd.readouterr().err
