"""Pins for one call's sandbox (`sandbox/policy.py`), through the real kernel sandbox:
the devices every command needs stay usable, and `network: on` does not switch off the
file system's confinement. Each was a mutant no test noticed (issue 28, round 3).
"""

from __future__ import annotations

import json

import pytest
from escapes import Place, escape_is_refused, needs_landlock, needs_seccomp, run

from assembler.sandbox.policy import Policy

DEVICES = (
    "for d in null zero random urandom; do echo x > /dev/$d && echo $d-written; done; "
    "head -c 3 /dev/zero | wc -c; head -c 3 /dev/urandom | wc -c; "
    "echo x > /dev/full; "
    "exec 3<>/dev/tty"
)


@needs_landlock
@needs_seccomp
def test_the_devices_every_command_needs_stay_usable(place: Place) -> None:
    result = run(place.boxed(), DEVICES)
    assert "Permission denied" not in result.content, result.content
    lines = result.content.splitlines()
    written = ["null-written", "zero-written", "random-written", "urandom-written"]
    assert lines[:6] == [*written, "3", "3"], result.content
    assert "echo: write error: No space left on device" in result.content  # opened, then full
    # no controlling terminal in a tool call: the open fails for that reason, not the box's
    assert "/dev/tty: No such device or address" in result.content


@needs_landlock
@needs_seccomp
def test_network_on_still_confines_the_file_system(place: Place) -> None:
    marker = place.outside / "escaped"
    result = escape_is_refused(place, f"echo x > {marker}", marker.exists, network="on")
    assert "Permission denied" in result.content


# The supervisor that applies a policy is a process of its own, started from the files
# on disk: the two checks below hold its side of the trip in this process too.


@pytest.mark.parametrize(
    ("filesystem", "network", "confines"),
    [
        ("workspace-write", "on", True),
        ("read-only", "on", True),
        ("off", "off", True),
        ("off", "allow", True),
        ("off", "on", False),
    ],
)
def test_a_policy_confines_unless_both_files_and_network_are_open(
    filesystem: str, network: str, confines: bool
) -> None:
    assert Policy(filesystem, network).confines is confines


def test_every_part_of_a_policy_reaches_the_supervisor() -> None:
    # a user who is not root enters the private network through its user namespace
    policy = Policy(
        "workspace-write",
        "allow",
        writable=("/ws", "/tmp/box"),
        hidden=("/home/u/.ssh",),
        devices=("/dev/null",),
        readable=("/usr", "/ws"),
        env={"TMPDIR": "/tmp/box"},
        netns="/proc/7/fd/5",
        userns="/proc/7/fd/6",
    )
    assert Policy.from_dict(json.loads(policy.to_json())) == policy
