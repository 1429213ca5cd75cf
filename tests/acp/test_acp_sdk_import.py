"""The SDK imported for a server (`sdk_import`): its models validate and serialise as
before, pydantic's settings are back as they were afterwards, and models defined
later are built at once as usual. In a fresh interpreter: the test process has
imported the SDK already."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
from assembler.acp.sdk_import import import_sdk
import_sdk()
assert "acp.schema" in sys.modules
import pydantic
from pydantic._internal import _config, _fields
from acp.schema import PromptRequest, PromptResponse

assert _config.config_defaults["defer_build"] is False
assert _fields.extract_docstrings_from_cls.__module__ == "pydantic._internal._docs_extraction"
request = PromptRequest.model_validate(
    {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}
)
assert request.prompt[0].text == "hi"
try:
    PromptRequest.model_validate({"sessionId": 5, "prompt": []})
except pydantic.ValidationError:
    pass
else:
    raise AssertionError("a wrong type was accepted")
dumped = PromptResponse(stop_reason="end_turn").model_dump(by_alias=True, exclude_none=True)
assert dumped == {"stopReason": "end_turn"}, dumped

class Later(pydantic.BaseModel):
    x: int
    "documented"

assert Later.__pydantic_complete__
assert Later.model_fields["x"].description is None  # no use_attribute_docstrings asked
print("ok")
"""


def test_the_lighter_import_changes_nothing_a_server_sees() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr
