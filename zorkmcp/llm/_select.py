"""Choosing the chat model from settings: a real endpoint, or the offline scripted model."""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from attrs import define, field

from .._urls import MODEL_URL_EXAMPLE, safe_url, url_problem
from ..errors import ConfigError
from ..observability import EventSink, NullSink
from ._client import LLMClient, open_llm_client
from ._scripted import DEFAULT_WALKTHROUGH, ScriptedModel
from ._urls import is_local_base_url, is_openai

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping, Sequence

    from ..config import LLMSettings, SamplingSettings, Settings
    from ._models import ChatModel

__all__ = [
    "API_KEY_ENV_VARS",
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL",
    "ModelChoice",
    "check_base_url",
    "describe_model",
    "open_chat_model",
    "resolve_api_key",
    "sampling_arguments",
]

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_MODEL = "openai/gpt-4o-mini"
API_KEY_ENV_VARS: tuple[str, ...] = ("OPENROUTER_API_KEY", "OPENAI_API_KEY")
"""Where the API key is looked for when ``api_key_env`` names no variable."""


def check_base_url(base_url: str) -> None:
    """Refuse a model endpoint the HTTP client cannot use, in the words of ``--base-url``.

    Raises:
        ConfigError: ``base_url must be an http:// or https:// URL with a host, got …`` (one line).
    """
    if (problem := url_problem(base_url, example=MODEL_URL_EXAMPLE)) is not None:
        raise ConfigError(f"base_url {problem}")


def resolve_api_key(
    llm: LLMSettings, base_url: str, *, environ: Mapping[str, str] | None = None
) -> tuple[str | None, str | None]:
    """Find the API key in the environment.

    ``[tool.zorkgpt.llm] api_key_env`` names the only variable to read when it is set;
    otherwise ``OPENROUTER_API_KEY`` and ``OPENAI_API_KEY`` are tried (``OPENAI_API_KEY``
    first when the base URL is OpenAI's). Empty values count as unset.

    Args:
        llm: the ``[tool.zorkgpt.llm]`` settings.
        base_url: the endpoint the key is for.
        environ: the environment (``os.environ`` by default).

    Returns:
        ``(key, variable name)``, or ``(None, None)`` when no key is set.
    """
    env = os.environ if environ is None else environ
    if llm.api_key_env:
        names: tuple[str, ...] = (llm.api_key_env,)
    elif is_openai(base_url):
        names = tuple(reversed(API_KEY_ENV_VARS))
    else:
        names = API_KEY_ENV_VARS
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value, name
    return None, None


def sampling_arguments(sampling: SamplingSettings) -> dict[str, Any]:
    """``[tool.zorkgpt.agent_sampling]`` as keyword arguments for ``complete()``.

    Args:
        sampling: the sampling settings; values left ``None`` stay ``None`` (and are not sent).
    """
    return {
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": sampling.top_k,
        "min_p": sampling.min_p,
        "max_tokens": sampling.max_tokens,
    }


def _offline_warning(llm: LLMSettings, base_url: str, model: str) -> str:
    variables = llm.api_key_env or " or ".join(API_KEY_ENV_VARS)
    return (
        f"No API key for {safe_url(base_url)} (set {variables}, name another variable with api_key_env in "
        f"[tool.zorkgpt.llm], or point agent_base_url / client_base_url at a local server such as "
        f"http://localhost:11434/v1): using the OFFLINE SCRIPTED MODEL instead of {model} — its actions "
        f"come from a fixed list of commands, not from an LLM."
    )


@define(kw_only=True)
class ModelChoice:
    """Which chat model an episode talks to, decided once from the settings (no async resources).

    The choice outlives event loops: the plain ``bridge.get_action()`` path opens the model in every
    ``trio.run`` with :meth:`open`, and the offline scripted model is the same object each time, so
    its place in the walkthrough survives between calls. An HTTP client is opened per :meth:`open`.

    Attributes:
        base_url: the endpoint (``base_url_override``, else ``agent_base_url``, else
            ``client_base_url``, else OpenRouter).
        model: the model name (``model_override``, else ``agent_model``, else :data:`DEFAULT_MODEL`).
        scripted: the offline scripted model when there is no API key and the endpoint is not
            local; ``None`` when a real endpoint is used.
        notice: the one-line explanation shown when the scripted model plays.
    """

    base_url: str
    model: str
    scripted: ScriptedModel | None
    notice: str | None
    _api_key: str | None = field(repr=False, alias="api_key")
    _settings: Settings = field(repr=False, alias="settings")

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        model_override: str | None = None,
        base_url_override: str | None = None,
        walkthrough: Sequence[str] | None = None,
    ) -> ModelChoice:
        """Decide between a real endpoint and the offline scripted model (see :func:`resolve_api_key`).

        Raises:
            ConfigError: ``base_url_override`` is a URL the HTTP client cannot use (``localhost:8080/v1``
                without ``http://``): without an API key it would otherwise let the offline scripted
                model play without a word about it. (A base URL from the settings is checked with them.)
        """
        if base_url_override:
            check_base_url(base_url_override)
        llm = settings.llm
        base_url = base_url_override or llm.agent_base_url or llm.client_base_url or DEFAULT_BASE_URL
        model = model_override or llm.agent_model or DEFAULT_MODEL
        api_key, _ = resolve_api_key(llm, base_url)
        if api_key is None and not is_local_base_url(base_url):
            commands = DEFAULT_WALKTHROUGH if walkthrough is None else walkthrough
            return cls(
                base_url=base_url,
                model=model,
                scripted=ScriptedModel(commands),
                notice=_offline_warning(llm, base_url, model),
                api_key=None,
                settings=settings,
            )
        return cls(
            base_url=base_url, model=model, scripted=None, notice=None, api_key=api_key, settings=settings
        )

    @property
    def plays(self) -> str:
        """The name of the model that plays: the scripted model's when it plays, else :attr:`model`."""
        return self.scripted.model if self.scripted is not None else self.model

    def announce(self, events: EventSink) -> None:
        """Say once (per episode) which model plays when it is the offline scripted model."""
        if self.notice is not None:
            events.emit("llm_offline_model", base_url=safe_url(self.base_url), model=self.model)
            events.log("INFO", self.notice)

    @asynccontextmanager
    async def open(self, events: EventSink | None = None) -> AsyncIterator[ChatModel]:
        """Yield the chat model: the scripted model, or an :class:`LLMClient` on its own HTTP client.

        Args:
            events: where the client reports retries (``llm_retry``) and a refused
                ``response_format`` (``llm_response_format_dropped``).
        """
        if self.scripted is not None:
            yield self.scripted
            return
        async with open_llm_client(
            base_url=self.base_url,
            model=self.model,
            api_key=self._api_key,
            retry=self._settings.retry,
            events=events,
            cache_control=self._settings.llm.cache_control,
        ) as client:
            yield client


@asynccontextmanager
async def open_chat_model(
    settings: Settings,
    *,
    model_override: str | None = None,
    base_url_override: str | None = None,
    walkthrough: Sequence[str] | None = None,
    events: EventSink | None = None,
) -> AsyncIterator[ChatModel]:
    """Open the chat model the settings describe (:meth:`ModelChoice.from_settings`, then ``open``).

    With an API key (see :func:`resolve_api_key`) or a local base URL this is an
    :class:`LLMClient`; otherwise it is a :class:`ScriptedModel` playing ``walkthrough``
    (the opening of Zork I by default), and an ``llm_offline_model`` event says so.

    Args:
        settings: the loaded settings (``[tool.zorkgpt.llm]`` and ``[tool.zorkgpt.retry]``).
        model_override: e.g. from ``--model``.
        base_url_override: e.g. from ``--base-url``.
        walkthrough: the commands for the scripted model.
        events: where the offline notice and retries are reported.

    Yields:
        The chat model; an HTTP client closes when the context exits.
    """
    choice = ModelChoice.from_settings(
        settings, model_override=model_override, base_url_override=base_url_override, walkthrough=walkthrough
    )
    sink = events if events is not None else NullSink()
    choice.announce(sink)
    async with choice.open(sink) as model:
        yield model


def describe_model(chat_model: ChatModel) -> str:
    """One line for banners: which model answers, and where (never the key).

    Args:
        chat_model: an :class:`LLMClient`, a :class:`ScriptedModel` or another chat model.
    """
    if isinstance(chat_model, ScriptedModel):
        tool = (
            f"calls {chat_model.tool_name!r} every {chat_model.tool_every} turns"
            if chat_model.tool_every
            else "never calls tools"
        )
        return (
            f"{chat_model.model} — offline scripted model, no LLM is called "
            f"({len(chat_model.commands)} commands; {tool})"
        )
    if isinstance(chat_model, LLMClient):
        key = "API key set" if chat_model.has_api_key else "no API key"
        return f"{chat_model.model} at {safe_url(chat_model.base_url)} ({key})"
    return f"{chat_model.model}{' (scripted)' if chat_model.scripted else ''}"
