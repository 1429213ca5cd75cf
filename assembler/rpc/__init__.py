"""JSON lines over stdio: an editor or another program drives an agent.

One request per line, `{"id": 1, "method": "prompt", "params": {"text": "..."}}`.
Every request gets exactly one final answer, `{"id": 1, "result": ...}` or
`{"id": 1, "error": {"type": ..., "message": ...}}`; while a prompt runs, each event
of the run arrives first as `{"id": 1, "event": {...}}` (the same events as
`assemble run --json`, plus `permission_request`). A line that is not JSON, or not an
object with a string `method`, is answered with `id` null (or the request's `id`,
when it has one).

Methods: `prompt` (`text`, a non-empty string; `max_turns`, a positive integer),
`cancel`, `system_prompt`, `tools`, `messages`, `reload`, `shutdown`; for sessions
`steer`, `follow_up` (`text`), `compact` (`instructions`), `fork` (`entry_id`),
`sessions` (`limit`), `switch_session` (`session`), `new_session`, `state`; for
permissions `permission_reply` (`request_id`, `choice`, `reason`; see
`rpc.approvals`). `params`, when given, must be an object. README's RPC section has
one example of each.

Input is read as it arrives, in its own thread, so a `cancel` is handled the moment
it is read, even while other requests wait: it stops the running prompt and every
prompt still waiting in line (each answered with an error of type `Cancelled`), and
answers `{"cancelled": true}` if there was any. `steer`, `follow_up`, `state` and
`permission_reply` are answered the moment they are read too, since they matter while
a prompt runs (a steer reaches the running prompt after its tools; a prompt waits on
a permission reply). Every other request is served in the order it was read, one at
a time: a request sent while a prompt runs is answered after that prompt's final
answer.

`shutdown` takes its turn like any other request: it waits for the running prompt
and the requests before it, answers `{"ok": true}`, and the server stops. To stop a
running prompt sooner, send `cancel` (before or after `shutdown`); until the server
stops, any other request read after `shutdown` (but the ones answered at once) is
answered with an error of type `ShuttingDown` (input left unread then is ignored).
The end of input acts like a `shutdown` without an answer: the requests before it
are still served. A request that fails is answered with its error: the class name of
an `AssemblerError`, `InvalidParams`, `MethodNotFound`, or `InternalError` for
anything unexpected (its traceback goes to stderr). A line longer than
`MAX_LINE_BYTES` (16 MiB) is discarded and answered with `id` null and an error of
type `LineTooLong`. The agent is the one `build_agent` made, exactly as for the CLI
and the SDK.
"""

from __future__ import annotations

from assembler.rpc.errors import RpcError
from assembler.rpc.reader import MAX_LINE_BYTES, Input, OverlongLine, read_lines
from assembler.rpc.server import IMMEDIATE, Request, RpcServer, serve

__all__ = [
    "IMMEDIATE",
    "MAX_LINE_BYTES",
    "Input",
    "OverlongLine",
    "Request",
    "RpcError",
    "RpcServer",
    "read_lines",
    "serve",
]
