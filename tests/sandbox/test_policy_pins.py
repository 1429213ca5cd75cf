"""Pins for one call's sandbox (`sandbox/policy.py`), through the real kernel sandbox:
the devices every command needs stay usable, and `network: on` does not switch off the
file system's confinement. Each was a mutant no test noticed (issue 28, round 3).
"""

from __future__ import annotations

from escapes import Place, escape_is_refused, needs_landlock, needs_seccomp, run

pytestmark = [needs_landlock, needs_seccomp]

DEVICES = (
    "for d in null zero random urandom; do echo x > /dev/$d && echo $d-written; done; "
    "head -c 3 /dev/zero | wc -c; head -c 3 /dev/urandom | wc -c; "
    "echo x > /dev/full; "
    "exec 3<>/dev/tty"
)


def test_the_devices_every_command_needs_stay_usable(place: Place) -> None:
    result = run(place.boxed(), DEVICES)
    assert "Permission denied" not in result.content, result.content
    lines = result.content.splitlines()
    written = ["null-written", "zero-written", "random-written", "urandom-written"]
    assert lines[:6] == [*written, "3", "3"], result.content
    assert "echo: write error: No space left on device" in result.content  # opened, then full
    # no controlling terminal in a tool call: the open fails for that reason, not the box's
    assert "/dev/tty: No such device or address" in result.content


def test_network_on_still_confines_the_file_system(place: Place) -> None:
    marker = place.outside / "escaped"
    result = escape_is_refused(place, f"echo x > {marker}", marker.exists, network="on")
    assert "Permission denied" in result.content
