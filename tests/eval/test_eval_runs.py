"""`assemble eval` in process: isolation, sessions, timeouts, errors, exit codes, output."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from clirun import assemble
from eval_project import Project, answer, call
from procs import live_processes_with


def results(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_task_that_deletes_files_does_not_affect_the_next(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    before = project.tree()
    wreck = project.script(
        "wreck", [call("bash", command="rm -rf src tests notes.txt"), answer("gone")]
    )
    file = project.eval_file(
        [
            {
                "id": "a-wreck",
                "prompt": "Delete everything.",
                "model": wreck,
                "checks": [{"command": "test ! -e src && test ! -e notes.txt"}],
            },
            {
                "id": "b-intact",
                "prompt": "Look.",
                "checks": [
                    {"command": "test -f src/app.py && test -f notes.txt"},
                    {"unchanged": "**"},
                ],
            },
        ]
    )
    out = project.root / "r.jsonl"
    outcome = assemble(
        capsys, "eval", str(file), "--trust", "--out", str(out), "--concurrency", "1",
        "--repeat", "2",
    )  # fmt: skip
    assert outcome.code == 0, outcome.out
    assert {(r["task"], r["repeat"], r["status"]) for r in results(out)} == {
        ("a-wreck", 1, "passed"),
        ("a-wreck", 2, "passed"),
        ("b-intact", 1, "passed"),
        ("b-intact", 2, "passed"),
    }
    assert project.tree() == before  # the workspace itself was never touched


def test_runs_at_once_each_have_their_own_copy(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """Four runs at a time, each writing the same file with its own content while the
    others run: every run sees only its own."""
    model = project.script(
        "own",
        [
            call("bash", command="echo $$ > mine.txt; sleep 0.3; cat mine.txt > seen.txt"),
            answer("ok"),
        ],
    )
    checks = [{"command": "cmp mine.txt seen.txt"}, {"unchanged": "notes.txt"}]
    file = project.eval_file([{"id": "own", "prompt": "Go.", "model": model, "checks": checks}])
    out = project.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(file), "--trust", "--out", str(out), "--repeat", "4")
    assert outcome.code == 0, outcome.out
    assert [r["status"] for r in results(out)] == ["passed"] * 4


def test_each_run_has_its_own_session_file_beside_the_results(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project.eval_file([{"id": "one", "prompt": "Say something unusual: kumquat."}])
    out = project.root / "res" / "r.jsonl"
    assemble(capsys, "eval", str(file), "--out", str(out), "--repeat", "2")
    sessions = [Path(r["session"]) for r in results(out)]
    assert len(set(sessions)) == 2
    for session in sessions:
        assert session.parent == project.root / "res" / "r.sessions" / "one"
        assert "kumquat" in session.read_text()


def test_a_run_that_outlasts_its_timeout_is_an_error(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    slow = project.script("slow", [call("bash", command="sleep 30.4473"), answer("late")])
    file = project.eval_file(
        [
            {"id": "slow", "prompt": "Wait.", "model": slow, "timeout": 1},
            {"id": "quick", "prompt": "Hi."},
        ]
    )
    out = project.root / "r.jsonl"
    started = time.monotonic()
    outcome = assemble(capsys, "eval", str(file), "--out", str(out), "--trust")
    assert time.monotonic() - started < 15
    assert outcome.code == 1
    by_task = {r["task"]: r for r in results(out)}
    assert by_task["slow"]["status"] == "error"
    assert by_task["slow"]["error"] == "timed out after 1 s"
    assert by_task["slow"]["checks"] == []
    assert by_task["slow"]["tool_calls"][0]["name"] == "bash"  # what it did until then
    assert by_task["quick"]["status"] == "passed"
    assert "ERROR slow#1: timed out after 1 s" in outcome.out
    assert live_processes_with("sleep 30.4473") == []


def test_a_failing_model_is_an_error_and_the_rest_goes_on(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    short = project.script("short", [call("read", path="notes.txt")])  # no reply after it
    file = project.eval_file(
        [
            {
                "id": "broken",
                "prompt": "Read.",
                "model": short,
                "checks": [{"tool_called": "read"}],
            },
            {"id": "fine", "prompt": "Hi."},
        ]
    )
    out = project.root / "r.jsonl"
    assert assemble(capsys, "eval", str(file), "--out", str(out), "--trust").code == 1
    by_task = {r["task"]: r for r in results(out)}
    assert by_task["broken"]["status"] == "error"
    assert by_task["broken"]["reason"] == "error"
    assert "script exhausted" in by_task["broken"]["error"]
    assert by_task["fine"]["status"] == "passed"


def test_max_turns_is_a_failure_not_an_error(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = project.script("loop", [call("read", path="notes.txt")] * 3)
    file = project.eval_file([{"id": "loops", "prompt": "Go.", "model": loop, "max_turns": 2}])
    out = project.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(file), "--out", str(out), "--trust")
    assert outcome.code == 1
    [record] = results(out)
    assert (record["status"], record["reason"], record["turns"]) == ("failed", "max_turns", 2)
    assert "FAIL loops#1: the run ended with `max_turns`" in outcome.out


def test_an_agent_that_cannot_be_built_is_an_error_per_run(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project.eval_file([{"id": "t", "prompt": "Hi."}])
    out = project.root / "r.jsonl"
    # (a model that cannot work for any run, `nosuch:model`, is a usage error found
    # before the first task: tests/cli/test_model_defaults.py)
    outcome = assemble(capsys, "eval", str(file), "--out", str(out), "--model", "openai:gpt-4o")
    assert outcome.code == 1
    [record] = results(out)
    assert record["status"] == "error"
    assert "OPENAI_API_KEY" in record["error"]


def test_the_model_comes_from_the_command_line_then_the_task_then_the_defaults(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    task_model = project.script("task", [answer("from the task")])
    default_model = project.script("dflt", [answer("from the defaults")])
    file = project.eval_file(
        [{"id": "own", "prompt": "?", "model": task_model}, {"id": "default", "prompt": "?"}],
        defaults={"model": default_model},
    )
    out = project.root / "r.jsonl"
    assemble(capsys, "eval", str(file), "--out", str(out))
    answers = {r["task"]: (r["answer"], r["model"]) for r in results(out)}
    scripts = project.root / "scripts"
    assert answers == {
        "own": ("from the task", f"scripted:{scripts / 'task.yaml'}"),
        "default": ("from the defaults", f"scripted:{scripts / 'dflt.yaml'}"),
    }
    project.script("cli", [answer("from the command line")])
    out2 = project.root / "r2.jsonl"
    assemble(capsys, "eval", str(file), "--out", str(out2), "--model", "scripted:scripts/cli.yaml")
    assert {r["answer"] for r in results(out2)} == {"from the command line"}


def test_tasks_from_a_jsonl_file_carry_their_metadata(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.tasks_file(
        [
            {"id": "first", "prompt": "One?", "checks": [{"answer_contains": "Done"}]},
            {"prompt": "Two?", "metadata": {"source": "row 2", "weight": 2}},
        ]
    )
    path = project.root / "batch.eval.yaml"
    path.write_text("version: 1\nagent: agent.yaml\ntasks_file: tasks.jsonl\n")
    out = project.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(path), "--out", str(out))
    assert outcome.code == 0, outcome.out
    assert sorted((r["task"], r["status"], r["metadata"]) for r in results(out)) == [
        ("first", "passed", {}),
        ("line-2", "passed", {"source": "row 2", "weight": 2}),
    ]
    by_task = {r["task"]: r for r in results(out)}
    assert by_task["first"]["checks"][0]["evidence"] == "found at character 0: 'Done.'"


def test_output_without_a_terminal_is_one_line_per_run_then_the_summary(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project.eval_file(
        [
            {"id": "good", "prompt": "?", "checks": [{"answer_contains": "Done"}]},
            {"id": "bad", "prompt": "?", "checks": [{"answer_contains": "Never"}]},
        ]
    )
    out = project.root / "r.jsonl"
    outcome = assemble(
        capsys, "eval", str(file), "--out", str(out), "--repeat", "2", "--concurrency", "1"
    )
    lines = outcome.out.splitlines()
    assert lines[0] == f"4 run(s); results in {out}"
    assert [line.split()[:2] for line in lines[1:5]] == [
        ["PASS", "good#1"],
        ["PASS", "good#2"],
        ["FAIL", "bad#1"],
        ["FAIL", "bad#2"],
    ]
    assert "\x1b" not in outcome.out and "\r" not in outcome.out
    header, good, bad, rule, overall = lines[5:10]
    assert header.split() == ["task", "passed", "rate", "turns", "tokens", "p50", "p95"]
    assert good.split()[:5] == ["good", "2/2", "100%", "1.0", "0"]
    assert bad.split()[:3] == ["bad", "0/2", "0%"]
    assert set(rule.replace(" ", "")) == {"-"}
    assert overall.split()[:3] == ["overall", "2/4", "50%"]
    assert lines[10].startswith("4 runs; 0 tokens (0 in, 0 out); wall time ")
    assert lines[11] == (
        "FAIL bad#1: answer_contains: Never: not in the answer (5 characters): 'Done.'"
    )
    assert lines[-1] == f"results: {out}"


def test_exit_2_on_usage_errors(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = project.root / "bad.eval.yaml"
    bad.write_text("version: 1\nagent: agent.yaml\ntasks:\n  - id: x\n    promt: hi\n")
    outcome = assemble(capsys, "eval", str(bad))
    assert outcome.code == 2
    assert "bad.eval.yaml:5:5: error: unknown key `promt`; did you mean `prompt`?" in outcome.err
    assert "nothing was run" in outcome.err
    assert assemble(capsys, "eval").code == 2
    assert assemble(capsys, "eval", str(project.root / "none.eval.yaml")).code == 2
    good = project.eval_file([{"id": "x", "prompt": "hi"}])
    monkeypatch.chdir(project.root)  # where a default results file would go
    outcome = assemble(capsys, "eval", str(good), "--only", "nothing*")
    assert outcome.code == 2
    assert "--only 'nothing*' matches no task (tasks: x)" in outcome.err
    outcome = assemble(capsys, "eval", str(good), "--scheduler", "nonsense")
    assert outcome.code == 2
    assert "local:N" in outcome.err
    assert assemble(capsys, "eval", str(good), "--rerun-failed").code == 2
    assert not (project.root / "eval-results").exists()  # nothing ran, nothing written


def test_an_invalid_agent_stops_before_any_task(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    (project.root / "agent.yaml").write_text("version: 1\nname: tester\nidentiy: x\n")
    file = project.eval_file([{"id": "x", "prompt": "hi", "checks": [{"command": "touch /nope"}]}])
    out = project.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(file), "--out", str(out), "--trust")
    assert outcome.code == 2
    assert "agent.yaml:3:1: error: unknown key `identiy`; did you mean `identity`?" in outcome.err
    assert not out.exists()


def test_only_selects_tasks_by_glob(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    file = project.eval_file(
        [
            {"id": "fix-a", "prompt": "?"},
            {"id": "fix-b", "prompt": "?"},
            {"id": "other", "prompt": "?"},
        ]
    )
    out = project.root / "r.jsonl"
    assert assemble(capsys, "eval", str(file), "--out", str(out), "--only", "fix-*").code == 0
    assert sorted(r["task"] for r in results(out)) == ["fix-a", "fix-b"]


def test_the_default_results_file_is_new_for_every_invocation(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project.root)
    file = project.eval_file([{"id": "x", "prompt": "hi"}], name="mine")
    outcome = assemble(capsys, "eval", str(file))
    assert outcome.code == 0
    [written] = (project.root / "eval-results").glob("mine-*.jsonl")
    assert f"results: eval-results/{written.name}" in outcome.out
    assert len(results(written)) == 1


def test_sub_agents_work_in_the_tasks_copy_too(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """A child with a workspace of its own (the same folder as the lead's, not
    `inherit`) must change the copy, never the project."""
    root = project.root
    (root / "helper.yaml").write_text(
        "version: 1\nname: helper\nidentity: You write files.\nworkspace: ws\n"
        "model: scripted:scripts/helper.yaml\ntools: {sets: [coding]}\n"
    )
    project.script("helper", [call("write", path="made-by-child.txt", content="x"), answer("ok")])
    (root / "agent.yaml").write_text(
        (root / "agent.yaml")
        .read_text()
        .replace("  sets: [coding]\n", "  sets: [coding, {agent: helper.yaml}]\n")
    )
    lead = project.script("lead", [call("helper", task="write the file"), answer("Done.")])
    before = project.tree()
    file = project.eval_file(
        [{"id": "team", "prompt": "go", "model": lead, "checks": [{"tool_called": "helper"}]}]
    )
    outcome = assemble(capsys, "eval", str(file), "--out", str(root / "r.jsonl"), "--trust")
    assert outcome.code == 0, outcome.out + outcome.err
    assert project.tree() == before
    assert not (project.workspace / "made-by-child.txt").exists()
