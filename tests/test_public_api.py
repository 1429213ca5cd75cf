"""The public API (`import assembler`): every error a caller may catch and every event a
run yields is exported, `__all__` lists exactly what is exported, and each error
survives pickling (an error may cross a process, as Dask workers' do)."""

from __future__ import annotations

import inspect
import pickle
import subprocess
import sys
import typing

import pytest

import assembler
from assembler import errors
from assembler.runner import events


def error_types() -> list[type[errors.AssemblerError]]:
    return [
        value
        for value in vars(errors).values()
        if inspect.isclass(value)
        and issubclass(value, errors.AssemblerError)
        and value.__module__ == errors.__name__
    ]


def test_all_lists_exactly_the_exported_names_and_each_resolves() -> None:
    exported = set(assembler._EXPORTS) | {"__version__"}
    assert sorted(assembler.__all__) == sorted(exported)
    assert len(set(assembler.__all__)) == len(assembler.__all__)
    for name in assembler.__all__:
        assert getattr(assembler, name) is not None, name


def test_every_error_type_is_exported_as_itself() -> None:
    found = error_types()
    assert errors.ContextOverflowError in found  # the helper sees every module's class
    for error in found:
        assert getattr(assembler, error.__name__) is error, error.__name__
    assert assembler.Issue is errors.Issue


def test_every_event_type_is_exported_as_itself() -> None:
    kinds = typing.get_args(events.Event)
    assert events.RunEnd in kinds and events.SubagentEvent in kinds
    defined = {
        value
        for value in vars(events).values()
        if inspect.isclass(value) and value.__module__ == events.__name__
    }
    assert defined == set(kinds)  # no event class outside the union
    for kind in kinds:
        assert getattr(assembler, kind.__name__) is kind, kind.__name__
    assert assembler.Event == events.Event


def sample(error: type[errors.AssemblerError]) -> errors.AssemblerError:
    if error is errors.ManifestError:
        return errors.ManifestError([errors.Issue("a.yaml", 3, 5, "error", "bad", "tools")])
    if error is errors.PromptContextError:
        return errors.PromptContextError("NaN is not JSON", "$.limits[0]")
    if error is errors.PermissionRuleError:
        return errors.PermissionRuleError("unclosed parenthesis", "bash(git", 4)
    if error is errors.ContextOverflowError:
        return errors.ContextOverflowError("too long", prompt_tokens=9000, context_window=8192)
    return error("something went wrong")


@pytest.mark.parametrize("error", error_types(), ids=lambda e: e.__name__)
def test_every_error_pickles_with_its_message_and_fields(
    error: type[errors.AssemblerError],
) -> None:
    original = sample(error)
    copy = pickle.loads(pickle.dumps(original))
    assert type(copy) is error
    assert str(copy) == str(original)
    assert vars(copy) == vars(original)


def test_importing_the_package_imports_none_of_its_exports() -> None:
    """Names are imported on first use: `import assembler` stays cheap."""
    code = (
        "import sys, assembler; print(sorted(m for m in sys.modules if m.startswith('assembler.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['assembler.version']"
