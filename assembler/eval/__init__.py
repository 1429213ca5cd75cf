"""`assemble eval`: run an agent over tasks, each in a fresh copy of its workspace,
check the outcome, and report pass rates; in process, or on a Dask cluster.

The flow: `load` (the eval file against `schema`, its `tasks` or `jsonl` tasks file,
and the agent tree) -> `plan` (task runs: repeats, `--only`, what a results file
already holds) -> `evaluation` (N runs at a time, through an executor: in this
process, or `cluster` on Dask workers) -> `execute.run_task` for each (`workspace`
copy, the agent, `checks`) -> `records` (the results file, JSON lines) -> `progress`,
`summary`, `compare`. Nothing is imported here, so `assemble validate` pays only for
`load`.
"""
