"""What an episode's model use cost: the completions its model answered and their tokens.

:class:`MeteredModel` wraps the episode's :class:`~zorkmcp.llm.ChatModel` and counts into a
:class:`ModelUse` every completion it answers: the agent's and the MCP servers' sampling requests
alike, when the sampler is given the metered model. ``zorkmcp eval`` records the counts
(``llm_requests``, ``prompt_tokens``, ``completion_tokens``); ``zorkmcp play`` prints them in its
summary. A turn's :class:`~zorkmcp.engine.TurnResult` counts its own requests too, but a turn that an
error ends (a 400 after two answers) returns none: what its answered requests cost would be lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from ._models import ChatModel, CompletionRequest, LLMResponse

__all__ = ["TOKEN_COUNTS", "MeteredModel", "ModelUse"]

TOKEN_COUNTS: Final = ("prompt_tokens", "completion_tokens")
"""The token counts a summary keeps, as the model's answers report them (``usage``)."""


@attrs.define
class ModelUse:
    """The completions a model answered and their tokens, summed (the plain state of an episode).

    Attributes:
        requests: model requests answered with a completion (a request that failed is not one).
        usage: their token counts (``prompt_tokens``, ``completion_tokens``, …), summed: a key only
            once an answer reported it (an endpoint that sends no ``usage`` leaves them unknown, not 0).
        unmetered: of those answers, the ones without a ``prompt_tokens`` or ``completion_tokens`` count.
    """

    requests: int = 0
    usage: dict[str, int] = attrs.Factory(dict)
    unmetered: int = 0

    def count(self, response: LLMResponse) -> None:
        """Count one answered completion."""
        self.requests += 1
        usage = response.usage or {}
        for key, value in usage.items():  # as the engine sums a turn's
            if isinstance(value, int):
                self.usage[key] = self.usage.get(key, 0) + value
        if not all(isinstance(usage.get(key), int) for key in TOKEN_COUNTS):
            self.unmetered += 1

    def tokens(self, key: str) -> int | None:
        """The tokens the answers reported under ``key``; ``None`` (unknown) when none of them did.

        No answer at all spent none: 0. When some answers reported it and some did not, the sum of
        those that did (:attr:`unmetered` says how many did not).
        """
        if key in self.usage:
            return self.usage[key]
        return 0 if self.requests == 0 else None


class MeteredModel:
    """A :class:`~zorkmcp.llm.ChatModel` that counts each completion ``model`` answers into ``use``.

    Args:
        model: the model that answers (open: its owner closes it).
        use: where the counts go; one :class:`ModelUse` may take those of several models in turn
            (a model opened per call, for one episode). Default: a new one.
    """

    def __init__(self, model: ChatModel, use: ModelUse | None = None) -> None:
        self._model = model
        self.use = use if use is not None else ModelUse()

    @property
    def wrapped(self) -> ChatModel:
        """The model that answers (what a sampler refuses or not is decided by it)."""
        return self._model

    @property
    def model(self) -> str:
        return self._model.model

    @property
    def scripted(self) -> bool:
        return self._model.scripted

    async def complete(self, request: CompletionRequest, /) -> LLMResponse:
        response = await self._model.complete(request)
        self.use.count(response)
        return response
