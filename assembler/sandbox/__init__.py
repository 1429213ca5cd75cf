"""The kernel sandbox around every process an agent starts (README "Sandbox").

The manifest's `sandbox:` block (`spec`) becomes, per call, a `Policy` of absolute
paths and a network mode (`policy`); the process supervisor applies it in the child
right before `exec` (`confine`: Landlock for the file system, seccomp for sockets, a
private network namespace for `network: allow`, no capabilities). `support` says what
this machine can give, `proxy` filters `network: allow`, `runtime` holds one agent's
sandbox while it lives. The modules the supervisor imports (`policy`, `landlock`,
`seccomp`, `confine`) use the standard library only, so it starts fast.
"""
