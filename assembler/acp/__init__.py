"""`assemble acp`: an agent served to editors over the Agent Client Protocol.

ACP (https://agentclientprotocol.com) is JSON-RPC 2.0 over the agent's stdin and
stdout; Zed and JetBrains IDEs start an agent as a subprocess and drive it with it.
The official Python SDK (`agent-client-protocol`, the `[acp]` extra) does the
protocol; these modules map it onto an `Agent` that `build_agent` made:

- `stdio`, `framing`: the protocol owns stdin and stdout, everything else goes to
  stderr; malformed input is answered with JSON-RPC errors before the SDK sees it;
- `server`: initialize, session/new, load, resume, list, close, set_mode, prompt, cancel;
- `session`: one session's agent and its turns (queued, cancelled, steered);
- `listing`: `session/list` over the recorded sessions; `modes`: the permission
  modes as session modes; `commands`: slash commands, advertised and run;
- `updates`, `toolcalls`: run events and history as `session/update` notifications;
- `permissions`: the manifest's `ask` rules as `session/request_permission`;
- `content`: a prompt's content blocks as text.

Every module here but `stdio` and `framing` imports the SDK: import them inside
`requires("acp", ...)` (as `cli/acp.py` does).
"""
