"""`assemble eval`: run an agent over tasks, each in a fresh copy of its workspace,
check the outcome, and report pass rates; in process, or on a Dask cluster.

The flow: `load` (the eval file, checked like a manifest, and the agent tree) ->
`plan` (task runs: repeats, `--only`, what a results file already holds) -> an
executor (`local`: asyncio in this process; `cluster`: Dask workers) running
`execute.run_task` for each -> `results` (JSON lines) -> `summary` / `compare`.
Nothing is imported here, so `assemble validate` pays only for `load`.
"""
