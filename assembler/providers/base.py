"""The provider interface: stream one response for one request.

Kept small on purpose (pydantic-ai's lesson): a provider translates a
`ModelRequest` to its wire format and yields `TextDelta`s followed by exactly one
`ResponseDone`. Retries and timeouts belong to the official SDKs underneath.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from assembler.messages import ModelRequest, StreamEvent


@runtime_checkable
class ModelProvider(Protocol):
    """Anything that can answer a `ModelRequest` with a stream of events."""

    @property
    def name(self) -> str:
        """`provider:model`, as shown to users and recorded in sessions."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Yield text deltas, then one `ResponseDone`; raise `ProviderError` on failure."""
        ...

    async def aclose(self) -> None:
        """Release connections; called once when the agent closes."""
        ...
