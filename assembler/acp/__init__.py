"""`assemble acp`: an agent served to editors over the Agent Client Protocol.

ACP (https://agentclientprotocol.com) is JSON-RPC 2.0 over the agent's stdin and
stdout; Zed and JetBrains IDEs start an agent as a subprocess and drive it with it.
The official Python SDK (`agent-client-protocol`, the `[acp]` extra) does the
protocol; these modules map it onto an `Agent` that `build_agent` made:

- `stdio`: the protocol owns stdin and stdout, everything else goes to stderr;
- `server`: initialize, session/new, session/load, session/prompt, session/cancel;
- `session`: one session's agent and its turns (queued, cancelled, steered);
- `updates`, `toolcalls`: run events and history as `session/update` notifications;
- `permissions`: the manifest's `ask` rules as `session/request_permission`;
- `content`: a prompt's content blocks as text.

Every module here but `stdio` imports the SDK: import them inside
`requires("acp", ...)` (as `cli/acp.py` does).
"""
