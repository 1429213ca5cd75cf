"""The same evaluation on real Dask worker processes: identical results, a worker
killed mid-run, a scheduler given by address."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import assemble
from eval_project import Project, answer, call

from assembler.eval.cluster import probe
from assembler.eval.plan import parse_scheduler
from assembler.version import __version__

REPO = Path(__file__).resolve().parents[2]
VARYING = ("duration_s", "timings", "session", "worker", "started")


def results(path: Path) -> dict[tuple[str, int], dict]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return {(r["task"], r["repeat"]): r for r in records}


def comparable(record: dict) -> dict:
    """A record without what differs between any two runs, wherever they ran: timings,
    session paths, the worker, and the time unittest prints (`Ran 4 tests in 0.001s`)."""
    kept = {k: v for k, v in record.items() if k not in VARYING}
    kept["checks"] = [
        {**c, "evidence": re.sub(r"tests? in \d+\.\d+s", "tests in <t>s", c["evidence"])}
        for c in kept["checks"]
    ]
    return kept


@pytest.mark.slow
def test_local_cluster_and_in_process_give_identical_results(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = shipping / "evals" / "shipping.eval.yaml"
    here, there = shipping / "here.jsonl", shipping / "there.jsonl"
    local = assemble(capsys, "eval", str(file), "--trust", "--repeat", "2", "--out", str(here))
    cluster = assemble(
        capsys, "eval", str(file), "--trust", "--repeat", "2", "--out", str(there),
        "--scheduler", "local:2",
    )  # fmt: skip
    assert local.code == cluster.code == 1  # two tasks fail on purpose
    a, b = results(here), results(there)
    assert len(a) == 10 and a.keys() == b.keys()
    for key in a:
        assert comparable(a[key]) == comparable(b[key]), key
    statuses = sorted({(k[0], r["status"]) for k, r in a.items()})
    assert statuses == [
        ("explain-fee", "passed"),
        ("fix-rounding", "passed"),
        ("relax-the-test", "failed"),
        ("round-instead-of-ceil", "failed"),
        ("run-the-tests", "passed"),
    ]
    workers = {r["worker"] for r in b.values()}
    assert {r["worker"] for r in a.values()} == {"local"}
    assert len(workers) == 2 and all(w.startswith("tcp://127.0.0.1:") for w in workers)
    # the client alone wrote the results file; sessions were written by the workers
    assert all(Path(r["session"]).is_file() for r in b.values())


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_an_error_and_the_run_completes(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    killer = project.script(
        # bash runs under a command supervisor, forked by the process's long-lived
        # supervisor, whose parent is the worker
        "killer",
        [
            call(
                "bash",
                command="kill -9 $(awk '{print $4}' /proc/$(awk '{print $4}' /proc/$PPID/stat)/stat)",
            ),
            answer("x"),
        ],
    )
    tasks = [{"id": "killer", "prompt": "?", "model": killer}]
    tasks += [
        {"id": f"fine-{n}", "prompt": "?", "checks": [{"answer_contains": "Done"}]}
        for n in range(4)
    ]
    file = project.eval_file(tasks)
    out = project.root / "r.jsonl"
    outcome = assemble(
        capsys, "eval", str(file), "--out", str(out), "--scheduler", "local:2", "--trust"
    )
    assert outcome.code == 1
    records = results(out)
    assert len(records) == 5
    killed = records[("killer", 1)]
    assert killed["status"] == "error"
    assert killed["error"].startswith("the worker process running this task died")
    assert all(records[(f"fine-{n}", 1)]["status"] == "passed" for n in range(4))
    assert "ERROR killer#1: the worker process running this task died" in outcome.out


@pytest.mark.slow
def test_a_scheduler_address_runs_on_that_cluster(project: Project, tmp_path: Path) -> None:
    """A cluster started elsewhere (here: another process), reached by its address."""
    address_file = tmp_path / "address"
    starter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from distributed import LocalCluster\n"
            "cluster = LocalCluster(n_workers=1, threads_per_worker=2, processes=True,"
            " dashboard_address=None)\n"
            f"open({str(address_file)!r}, 'w').write(cluster.scheduler_address)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            if address_file.exists() and address_file.read_text():
                break
            assert starter.poll() is None
            subprocess.run(["sleep", "0.05"], check=True)
        address = address_file.read_text()
        file = project.eval_file([{"id": f"t{n}", "prompt": "?"} for n in range(3)])
        out = project.root / "r.jsonl"
        done = subprocess.run(
            [sys.executable, "-m", "assembler", "eval", str(file), "--out", str(out),
             "--scheduler", address],
            check=False, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        records = results(out)
        assert {r["status"] for r in records.values()} == {"passed"}
        assert {r["worker"] for r in records.values()} != {"local"}
    finally:
        assert starter.stdin is not None
        starter.stdin.close()
        starter.wait(timeout=30)


@pytest.mark.slow  # the client tries for its connect timeout (30 s) before giving up
def test_an_unreachable_scheduler_is_a_usage_error(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project.eval_file([{"id": "t", "prompt": "?"}])
    out = project.root / "r.jsonl"
    outcome = assemble(
        capsys, "eval", str(file), "--out", str(out), "--scheduler", "tcp://127.0.0.1:9"
    )
    assert outcome.code == 2
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in outcome.err
    assert not out.exists()


def test_scheduler_spellings() -> None:
    assert parse_scheduler("local:3") == 3
    assert parse_scheduler("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    for wrong in ("local:0", "local:x", "10.0.0.5:8786"):
        with pytest.raises(Exception, match="--scheduler"):
            parse_scheduler(wrong)


def test_the_worker_probe_names_what_it_cannot_read(tmp_path: Path) -> None:
    readable = tmp_path / "a.yaml"
    readable.write_text("x")
    answer_ = probe([str(readable), str(tmp_path / "missing.yaml")])
    assert answer_["version"] == __version__
    assert answer_["missing"] == [str(tmp_path / "missing.yaml")]


def test_without_dask_the_scheduler_option_names_the_extra(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "assembler.eval.cluster", raising=False)
    file = project.eval_file([{"id": "t", "prompt": "?"}])
    out = project.root / "r.jsonl"
    outcome = assemble(capsys, "eval", str(file), "--out", str(out), "--scheduler", "local:2")
    assert outcome.code == 2
    assert outcome.out == ""  # before anything else: no plan, no progress, no summary
    assert outcome.err.splitlines() == [
        "error: --scheduler local:2 needs dask.distributed: pip install 'agent-assembler[dask]'"
    ]
    assert not out.exists()
