"""`assemble sessions to-test`: a recorded session as an eval task that replays it.

What is written, next to the eval file (in `<name>.replay/`):

* `<task>.script.yaml`: the model's side, every reply and compaction summary in order,
  in the `scripted` format; a sub-agent's session is `<task>.<tool>-<n>.script.yaml`;
* `<task>.expected.json`: what the model saw at each request (`regress.expected`);
* `<task>.start.json`: the workspace as the session found it (a git commit, the diff
  on top, the untracked files), rebuilt in each task run's fresh directory; with
  `--workspace DIR` the eval copies DIR instead;
* the eval file: the task (the user's prompts, steers and follow-ups in order, the
  replay, the start) and checks derived from what happened: the files the session
  changed end as they did (`files_equal`), the same tool calls in the same order
  (`tool_sequence`), the final answer.

Nothing here runs project code: the manifest is read (and validated) for the names of
its variables and its limits, never built. Secrets are scrubbed from everything
written (`regress.scrub`); the count is in the result.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assembler.errors import ConversionError
from assembler.manifest.model import Manifest
from assembler.providers.windows import context_window
from assembler.regress.recording import Recording, open_session_file, read_recording
from assembler.regress.replay_files import replay_files
from assembler.regress.scrub import Scrubber, manifest_variables, scrubber_for
from assembler.regress.start import check_start
from assembler.regress.task_checks import derived_checks
from assembler.regress.texts import Normalizer, default_rules, places_for
from assembler.regress.yaml_out import dump_json, dump_steps, dump_yaml
from assembler.validation.validator import validate_file

TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class ConvertOptions:
    """`sessions to-test`'s options: the eval file to write, the task id, a workspace
    folder instead of the recorded start, the manifest instead of the recorded one,
    the replay's mode, and the environment whose values are scrubbed."""

    out: Path
    task_id: str | None = None
    workspace: Path | None = None
    agent: Path | None = None
    mode: str = "strict"
    env: Mapping[str, str] | None = None


@dataclass
class Conversion:
    """What converting writes (`files`: path -> text), and what to tell the user."""

    eval_file: Path
    task_id: str
    files: dict[Path, str | bytes] = field(default_factory=dict)
    scrubber: Scrubber = field(default_factory=Scrubber)
    notes: list[str] = field(default_factory=list)
    sessions: int = 1

    def write(self, *, force: bool = False) -> None:
        """Write every file; an existing one is refused unless `force`."""
        if not force:
            existing = [path for path in self.files if path.exists()]
            if existing:
                shown = ", ".join(str(p) for p in existing[:3])
                raise ConversionError(f"{shown} already exist(s); pass --force to replace")
        for path, content in self.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, "utf-8")


def convert(session_file: Path, options: ConvertOptions) -> Conversion:
    """Read `session_file` and everything it links; build the files, write nothing."""
    session = open_session_file(session_file)
    recording = read_recording(session)
    header = recording.header
    out = Path(os.path.abspath(options.out))
    base = out.parent
    task_id = options.task_id or _default_id(header)
    if not TASK_ID.match(task_id):
        raise ConversionError(
            f"task id {task_id!r}: letters, digits, `.`, `_` and `-`, starting with a "
            "letter or digit"
        )
    manifest_path = _manifest_path(header, options.agent)
    manifest_text = manifest_path.read_text("utf-8", "replace")
    manifest = validate_file(manifest_path, unset_variables="warning").manifest
    names = [*(manifest.tools.env.passthrough if manifest else ()), _api_key_env(manifest)]
    scrubber = scrubber_for(manifest_variables(manifest_text, names), options.env)
    start = _start(header, options.workspace, out)
    recorded_ws = str(header.get("workspace") or "")
    repo = str(start.get("git_root", "")) if start else ""
    places = places_for(recorded_ws, repo, (os.path.realpath(recorded_ws), "{workspace}"))
    rules = default_rules()
    inputs = Normalizer(places, rules, scrubber)
    model_side = Normalizer(places, (), scrubber)
    replay_dir = base / f"{out.name.removesuffix('.yaml').removesuffix('.eval')}.replay"
    conversion = Conversion(out, task_id, scrubber=scrubber)
    window = _window(recording, manifest, header)
    _add_replay(
        conversion,
        recording,
        folder=replay_dir,
        base=base,
        name=task_id,
        inputs=inputs,
        model_side=model_side,
        window=window,
        task_id=task_id,
    )
    task: dict[str, Any] = {"id": task_id}
    task.update(_inputs(recording, model_side))
    task["model"] = f"scripted:{_rel(replay_dir / f'{task_id}.script.yaml', base)}"
    task["replay"] = {
        "expected": _rel(replay_dir / f"{task_id}.expected.json", base),
        "mode": options.mode,
    }
    if start is not None:
        start_file = replay_dir / f"{task_id}.start.json"
        conversion.files[start_file] = dump_json(_scrub_start(start, scrubber))
        task["start"] = _rel(start_file, base)
    checks, notes = derived_checks(
        recording, model_side, replay_dir / f"{task_id}.files", base, scrubber
    )
    conversion.files.update(notes.files)
    conversion.notes.extend(notes.messages)
    if checks:
        task["checks"] = checks
    document: dict[str, Any] = {
        "version": 1,
        "name": _eval_name(out),
        "description": f"A replay of session {header.get('id')} of `{header.get('agent')}`",
        "agent": _rel(manifest_path, base),
    }
    if options.workspace is not None:
        document["workspace"] = _rel(Path(os.path.abspath(options.workspace)), base)
    document["tasks"] = [task]
    conversion.files[out] = _preamble(header, scrubber) + dump_yaml(document)
    return conversion


def _add_replay(
    conversion: Conversion,
    recording: Recording,
    *,
    folder: Path,
    base: Path,
    name: str,
    inputs: Normalizer,
    model_side: Normalizer,
    window: int | None,
    task_id: str,
) -> None:
    """The replay files of `recording` (named `name`), then its sub-agents' in turn."""

    def child_name(entry: Mapping[str, Any], number: int) -> tuple[str, str]:
        stem = f"{name}.{_slug(str(entry.get('tool', 'agent')))}-{number}"
        return f"{stem}.script.yaml", f"{stem}.expected.json"  # beside the expected file

    files = replay_files(
        recording,
        inputs=inputs,
        model_side=model_side,
        rules=default_rules(),
        context_window=window,
        child_name=child_name,
    )
    conversion.files[folder / f"{name}.script.yaml"] = (
        f"# The model's side of session {recording.header.get('id')}, replayed by the eval task"
        f" `{task_id}`.\n# `{{workspace}}` stands for the task's workspace.\n"
        + dump_steps(files.script)
    )
    conversion.files[folder / f"{name}.expected.json"] = dump_json(files.expected.to_dict())
    for entry, link in files.children:
        child_path = _child_file(entry, recording)
        child = read_recording(open_session_file(child_path))
        conversion.sessions += 1
        stem = Path(link.script).name.removesuffix(".script.yaml")
        _add_replay(
            conversion,
            child,
            folder=folder,
            base=base,
            name=stem,
            inputs=inputs,
            model_side=model_side,
            window=None,
            task_id=task_id,
        )


def _child_file(entry: Mapping[str, Any], parent: Recording) -> Path:
    """A sub-agent's session file: where the entry says, else beside the parent's."""
    named = Path(str(entry.get("session_file", "")))
    beside = parent.session.path.with_name(f"{entry.get('session', '')}.jsonl")
    for candidate in (named, beside):
        if candidate.name and candidate.is_file():
            return candidate
    raise ConversionError(
        f"the session of sub-agent call {entry.get('call_id')} (`{entry.get('tool')}`) is "
        f"gone: looked for {named} and {beside}"
    )


def _inputs(recording: Recording, model_side: Normalizer) -> dict[str, Any]:
    """The task's `prompt` and `messages` (everything the user did after it)."""
    items = list(recording.inputs)
    if not items or items[0].kind != "prompt":
        raise ConversionError(
            f"session {recording.header.get('id')} records no run start (`run_start` event): "
            "it was not written by `assemble run`, `rpc`, `acp` or an `Agent`"
        )
    first, rest = items[0], items[1:]
    messages: list[dict[str, Any]] = []
    for item in rest:
        if item.kind == "prompt":
            messages.append({"prompt": model_side(item.text)})
        elif item.kind == "steer":
            steer: dict[str, Any] = {"steer": model_side(item.text), "after_turn": item.after_turn}
            if item.before_tools:
                steer["before_tools"] = True
            messages.append(steer)
        elif item.kind == "follow_up":
            messages.append({"follow_up": model_side(item.text)})
        elif item.kind == "compact":
            messages.append({"compact": True})
        elif item.kind == "interrupt":
            messages.append(
                {"interrupt": {"after_turn": item.after_turn, "tools_ran": item.tools_ran}}
            )
    result: dict[str, Any] = {"prompt": model_side(first.text)}
    if recording.params is not None:  # scrubbed like every text the session holds
        result["params"] = _scrubbed(recording.params, model_side)
    if messages:
        result["messages"] = messages
    return result


def _start(header: Mapping[str, Any], workspace: Path | None, out: Path) -> dict[str, Any] | None:
    """The workspace start to rebuild, or None with `--workspace DIR`."""
    if workspace is not None:
        if not Path(workspace).is_dir():
            raise ConversionError(f"--workspace {workspace} is not a directory")
        return None
    start = header.get("workspace_start")
    if not isinstance(start, Mapping):
        raise ConversionError(
            f"session {header.get('id')} does not record where its workspace started (it was "
            "recorded before agent-assembler did); pass --workspace DIR with the files as they "
            "were when the session started"
        )
    if start.get("kind") != "git" or not start.get("complete"):
        reason = start.get("reason") or "it was not a git work tree"
        raise ConversionError(
            f"session {header.get('id')}'s workspace cannot be rebuilt: {reason}; pass "
            "--workspace DIR with the files as they were when the session started"
        )
    check_start(start, out)
    return dict(start)


def _scrub_start(start: Mapping[str, Any], scrubber: Scrubber) -> dict[str, Any]:
    """The start as written: secrets out of added diff lines and untracked texts (the
    diff's context lines are the commit's, so scrubbing them would break the patch)."""
    kept = {k: v for k, v in start.items() if k not in ("changed", "git_root")}
    diff = str(start.get("diff", ""))
    kept["diff"] = "\n".join(
        scrubber.text(line) if line.startswith("+") and not line.startswith("+++") else line
        for line in diff.split("\n")
    )
    untracked = []
    for original in start.get("untracked", ()):
        record = dict(original)
        if "text" in record:
            record["text"] = scrubber.text(str(record["text"]))
        record.pop("sha256", None)
        untracked.append(record)
    kept["untracked"] = untracked
    return kept


def _window(
    recording: Recording, manifest: Manifest | None, header: Mapping[str, Any]
) -> int | None:
    """The context window the session ran with, when a threshold compaction depends on
    it (the replay's model is a script, whose window nobody knows)."""
    if not any(r.kind == "summary" and r.reason == "threshold" for r in recording.requests):
        return None
    if manifest is not None and manifest.limits.context_window:
        return manifest.limits.context_window
    provider, _, name = str(header.get("model", "")).partition(":")
    return context_window(provider, name)


def _manifest_path(header: Mapping[str, Any], given: Path | None) -> Path:
    if given is not None:
        if not given.is_file():
            raise ConversionError(f"--agent {given} is not a file")
        return Path(os.path.abspath(given))
    recorded = header.get("manifest")
    if not isinstance(recorded, str) or not recorded:
        raise ConversionError(
            f"session {header.get('id')} names no manifest (an agent built from data); "
            "pass --agent FILE"
        )
    path = Path(recorded)
    if not path.is_file():
        raise ConversionError(f"the session's manifest {path} no longer exists; pass --agent FILE")
    return path


def _api_key_env(manifest: Manifest | None) -> str:
    if manifest is None or manifest.model is None:
        return ""
    return manifest.model.api_key_env or ""


def _default_id(header: Mapping[str, Any]) -> str:
    return f"session-{header.get('id', 'unknown')}"


def _eval_name(out: Path) -> str:
    name = out.name.removesuffix(".yaml").removesuffix(".yml").removesuffix(".eval")
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", name).lstrip("._-")
    return cleaned[:64] or "session"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", text) or "agent"


def _rel(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path, base)).as_posix()


def _preamble(header: Mapping[str, Any], scrubber: Scrubber) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    return (
        f"# Made by `assemble sessions to-test` on {stamp} from session {header.get('id')}\n"
        f"# (agent `{header.get('agent')}`, model {header.get('model')}); {scrubber.summary()}.\n"
        "# `assemble eval THIS_FILE` replays it and reports the first divergence;\n"
        "# `--model provider:name` runs the same task against a real model instead.\n"
    )


def _scrubbed(value: Any, model_side: Normalizer) -> Any:
    """`value` with every string in it scrubbed (parameter values are JSON)."""
    if isinstance(value, str):
        return model_side(value)
    if isinstance(value, Mapping):
        return {str(k): _scrubbed(v, model_side) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v, model_side) for v in value]
    return value
