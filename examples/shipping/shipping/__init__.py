"""A tiny shop backend with a shipping-fee bug (the agent-assembler example)."""
