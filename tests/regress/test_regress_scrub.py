"""Each credential shape the scrubber knows is replaced and counted; ordinary text,
short values and what was scrubbed already are left alone."""

from __future__ import annotations

import pytest

from assembler.regress.scrub import Scrubber, manifest_variables, scrubber_for

SHAPES = {
    "private key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "API key": "sk-ant-" + "a1B2" * 6,
    "GitHub token": "ghp_" + "A" * 36,
    "GitLab token": "glpat-" + "b" * 20,
    "Slack token": "xoxb-" + "1234567890-abc",
    "Stripe key": "sk_live_" + "c" * 24,
    "Google API key": "AIza" + "d" * 35,
    "AWS key id": "AKIA" + "E" * 16,
    "JSON web token": "eyJ" + "f" * 12 + ".eyJ" + "g" * 12 + "." + "h" * 12,
}
KEPT = {
    "bearer token": ("Authorization: Bearer " + "t" * 24, "Authorization: Bearer [scrubbed]"),
    "URL password": (
        "https://me:hunter2hunter2@example.com/x",
        "https://me:[scrubbed]@example.com/x",
    ),
    "password": ('password = "s3cr3tvalue"', 'password = "[scrubbed]"'),
}


@pytest.mark.parametrize("kind", list(SHAPES))
def test_a_credential_shape_is_scrubbed_and_counted(kind: str) -> None:
    scrubber = Scrubber()
    assert scrubber.text(f"before {SHAPES[kind]} after") == "before [scrubbed] after"
    assert scrubber.counts == {kind: 1}


@pytest.mark.parametrize("kind", list(KEPT))
def test_only_the_secret_part_is_scrubbed(kind: str) -> None:
    scrubber = Scrubber()
    given, expected = KEPT[kind]
    assert scrubber.text(given) == expected
    assert scrubber.counts == {kind: 1}
    assert scrubber.text(expected) == expected  # scrubbed once, not again
    assert scrubber.total == 1


def test_values_of_named_variables_are_scrubbed_by_name() -> None:
    names = manifest_variables("token: ${DEPLOY_TOKEN}\nflag: ${SHORT}\n", ["JAVA_HOME", "NODE_*"])
    assert names[:3] == ["DEPLOY_TOKEN", "SHORT", "JAVA_HOME"] and "NODE_*" not in names
    env = {"DEPLOY_TOKEN": "abcdefgh12345", "SHORT": "yes", "JAVA_HOME": "/usr/lib/jvm/java-21"}
    scrubber = scrubber_for(names, env)
    said = scrubber.text("deploy abcdefgh12345 with yes from /usr/lib/jvm/java-21")
    assert said == "deploy [scrubbed:DEPLOY_TOKEN] with yes from [scrubbed:JAVA_HOME]"
    assert (
        scrubber.summary() == "2 secrets scrubbed (1 value of DEPLOY_TOKEN, 1 value of JAVA_HOME)"
    )


def test_ordinary_text_is_left_alone() -> None:
    scrubber = Scrubber()
    text = "Ran 4 tests in 0.001s\nOK\nsk-short task-list AKIA sketch eyJ bearer of news"
    assert scrubber.text(text) == text
    assert scrubber.summary() == "no secrets found"
