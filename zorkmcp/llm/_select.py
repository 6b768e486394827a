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
from ._parse import KeyUse
from ._scripted import DEFAULT_WALKTHROUGH, ScriptedModel
from ._urls import is_local_base_url, is_openrouter

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping, Sequence

    from ..config import LLMSettings, SamplingSettings, Settings
    from ._models import ChatModel

__all__ = [
    "API_KEY_ENV_VARS",
    "BASE_URL_ENV",
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL",
    "OPENAI_KEY_ENV",
    "OPENROUTER_KEY_ENV",
    "ModelChoice",
    "check_base_url",
    "describe_model",
    "environ_base_url",
    "key_hint",
    "key_use",
    "key_variable",
    "open_chat_model",
    "pick_base_url",
    "resolve_api_key",
    "sampling_arguments",
    "shown_endpoint",
]

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_MODEL = "openai/gpt-4o-mini"
OPENROUTER_KEY_ENV = "OPENROUTER_API_KEY"
"""The variable whose key is sent to OpenRouter (and only there) when ``api_key_env`` names none."""
OPENAI_KEY_ENV = "OPENAI_API_KEY"
"""The variable whose key is sent to every other endpoint when ``api_key_env`` names none, as OpenAI's
own SDK sends it to whatever base URL is set (OpenAI, Groq, Together, a proxy, a local server)."""
API_KEY_ENV_VARS: tuple[str, ...] = (OPENROUTER_KEY_ENV, OPENAI_KEY_ENV)
"""The two variables a key is read from when ``api_key_env`` names none: one per kind of host
(:func:`key_variable`), never both."""
BASE_URL_ENV = "OPENAI_BASE_URL"
"""The environment variable read as the base URL when neither an override (``--base-url``, an eval
arm's ``base_url``) nor ``agent_base_url`` / ``client_base_url`` gives one (as OpenAI's own SDK reads it)."""


def check_base_url(base_url: str) -> None:
    """Refuse a model endpoint the HTTP client cannot use, in the words of ``--base-url``.

    Raises:
        ConfigError: ``base_url must be an http:// or https:// URL with a host, got …`` (one line).
    """
    if (problem := url_problem(base_url, example=MODEL_URL_EXAMPLE)) is not None:
        raise ConfigError(f"base_url {problem}")


def environ_base_url(environ: Mapping[str, str] | None = None) -> str | None:
    """``OPENAI_BASE_URL`` as set (``None``: unset, empty or only spaces), not yet checked.

    Args:
        environ: the environment (``os.environ`` by default).
    """
    value = (os.environ if environ is None else environ).get(BASE_URL_ENV, "")
    return value if value.strip() else None


def pick_base_url(
    llm: LLMSettings, override: str | None = None, *, environ: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """The endpoint the model is asked at, and where that choice came from.

    In this order: ``override`` (``--base-url``, an eval arm's ``base_url``, a ``Bridge``'s), the
    settings' ``agent_base_url``, then ``client_base_url``, then ``OPENAI_BASE_URL``, then OpenRouter.

    Args:
        llm: the ``[tool.zorkgpt.llm]`` settings (their URLs were checked when they loaded).
        override: a base URL that wins over the settings (``None`` or ``""``: none).
        environ: where ``OPENAI_BASE_URL`` is read (``os.environ`` by default).

    Returns:
        ``(base URL, source)``; the source is ``"override"``, ``"agent_base_url"``,
        ``"client_base_url"``, ``"OPENAI_BASE_URL"`` or ``"default"``.

    Raises:
        ConfigError: ``OPENAI_BASE_URL`` decides and the HTTP client cannot use it (one line naming
            the variable; its user info, query and fragment are never shown).
    """
    if override:
        return override, "override"
    if llm.agent_base_url:
        return llm.agent_base_url, "agent_base_url"
    if llm.client_base_url:
        return llm.client_base_url, "client_base_url"
    if (value := environ_base_url(environ)) is not None:
        if (problem := url_problem(value, example=MODEL_URL_EXAMPLE)) is not None:
            raise ConfigError(
                f"{BASE_URL_ENV} {problem}; it is the model's base URL when no --base-url (or eval arm's "
                "base_url) and no agent_base_url / client_base_url in [tool.zorkgpt.llm] gives one: correct "
                f"it, or unset it for the default {DEFAULT_BASE_URL}"
            )
        return value, BASE_URL_ENV
    return DEFAULT_BASE_URL, "default"


def shown_endpoint(base_url: str, source: str) -> str:
    """A base URL for messages (:func:`safe_url`), saying ``(from OPENAI_BASE_URL)`` when it came from there.

    The other sources are the user's own words (a flag, the settings) or the documented default.
    """
    suffix = f" (from {BASE_URL_ENV})" if source == BASE_URL_ENV else ""
    return safe_url(base_url) + suffix


def key_variable(llm: LLMSettings, base_url: str) -> str:
    """The one environment variable whose key is sent to ``base_url``.

    ``[tool.zorkgpt.llm] api_key_env`` when it names one (sent wherever the base URL points);
    otherwise ``OPENROUTER_API_KEY`` for OpenRouter's host and ``OPENAI_API_KEY`` for any other
    endpoint: a key never goes to a host it was not meant for.
    """
    if llm.api_key_env:
        return llm.api_key_env
    return OPENROUTER_KEY_ENV if is_openrouter(base_url) else OPENAI_KEY_ENV


def resolve_api_key(
    llm: LLMSettings, base_url: str, *, environ: Mapping[str, str] | None = None
) -> tuple[str | None, str | None]:
    """Find the API key for ``base_url`` in the environment.

    Only :func:`key_variable`'s variable is read: ``api_key_env`` when set; otherwise
    ``OPENROUTER_API_KEY`` for OpenRouter and ``OPENAI_API_KEY`` for every other endpoint.
    Empty values count as unset.

    Args:
        llm: the ``[tool.zorkgpt.llm]`` settings.
        base_url: the endpoint the key is for.
        environ: the environment (``os.environ`` by default).

    Returns:
        ``(key, variable name)``, or ``(None, None)`` when no key is set.
    """
    env = os.environ if environ is None else environ
    name = key_variable(llm, base_url)
    value = env.get(name, "").strip()
    return (value, name) if value else (None, None)


def key_hint(
    llm: LLMSettings, base_url: str, *, arm: bool = False, environ: Mapping[str, str] | None = None
) -> str | None:
    """One sentence for a message saying no key was found, when the *other* default variable is set.

    ``OPENAI_API_KEY`` is not sent to OpenRouter, nor ``OPENROUTER_API_KEY`` anywhere else; a user who
    set the one and sees "no API key" learns why and what to do. The key's value is never shown.

    Args:
        llm: the ``[tool.zorkgpt.llm]`` settings (``api_key_env`` set: ``None``, it names the only variable).
        base_url: the endpoint that has no key.
        arm: the message is about an eval arm (its ``api_key_env`` / ``base_url`` are named too).
        environ: the environment (``os.environ`` by default).

    Returns:
        The sentence (no trailing period), or ``None`` when there is nothing to add.
    """
    env = os.environ if environ is None else environ
    if llm.api_key_env or resolve_api_key(llm, base_url, environ=env)[0] is not None:
        return None
    if is_openrouter(base_url):
        if not env.get(OPENAI_KEY_ENV, "").strip():
            return None
        where = " (or the arm's base_url)" if arm else " (or client_base_url in [tool.zorkgpt.llm])"
        return (
            f"{OPENAI_KEY_ENV} is set, but it is only sent to endpoints other than OpenRouter's: to use it "
            f"with OpenAI, pass --base-url https://api.openai.com/v1{where}"
        )
    if not env.get(OPENROUTER_KEY_ENV, "").strip():
        return None
    where = " (or the arm's api_key_env)" if arm else ""
    return (
        f"{OPENROUTER_KEY_ENV} is set, but it is only sent to OpenRouter (openrouter.ai): export this "
        f'endpoint\'s key as {OPENAI_KEY_ENV}, or set api_key_env = "{OPENROUTER_KEY_ENV}" in '
        f"[tool.zorkgpt.llm]{where} to send it to {safe_url(base_url)} anyway"
    )


def key_use(
    llm: LLMSettings,
    base_url: str,
    model: str,
    *,
    arm: bool = False,
    environ: Mapping[str, str] | None = None,
) -> KeyUse:
    """What a 401 or 403 from ``base_url`` says: which variable's key was sent, or why none was.

    A key goes only to its own host (:func:`key_variable`), so "check the API key" no longer says
    enough: a local proxy (LiteLLM, vLLM started with ``--api-key``) gets no key when only
    ``OPENROUTER_API_KEY`` is set, and ``OPENAI_API_KEY`` goes to Groq as to OpenAI. The words name
    the variables and the settings that decide, never a key's value.

    Args:
        llm: the ``[tool.zorkgpt.llm]`` settings (after an eval arm's ``api_key_env``).
        base_url: the endpoint the requests go to.
        model: the model asked (a 403 is often a key without access to it).
        arm: the words are about an eval arm (its ``api_key_env`` is named too).
        environ: the environment (``os.environ`` by default), as the key was read from it.
    """
    env = os.environ if environ is None else environ
    shown = safe_url(base_url)
    name = key_variable(llm, base_url)
    also = " (or the arm's api_key_env)" if arm else ""
    if resolve_api_key(llm, base_url, environ=env)[0] is None:
        if llm.api_key_env:
            why = f"{name}, which api_key_env names, is not set; export this endpoint's key as {name}"
        elif not is_openrouter(base_url) and env.get(OPENROUTER_KEY_ENV, "").strip():
            why = (
                f"{OPENROUTER_KEY_ENV} is set but only sent to OpenRouter; export this endpoint's key as "
                f'{name}, or set api_key_env = "{OPENROUTER_KEY_ENV}" in [tool.zorkgpt.llm]{also}'
            )
        else:
            why = (
                f"{name} is not set; export this endpoint's key as {name}, or name the variable that holds "
                f"it with api_key_env in [tool.zorkgpt.llm]{also}"
            )
        missing = f"no API key was sent to {shown}: {why}"
        return KeyUse(missing, missing)
    if llm.api_key_env:
        refused = f"{shown} refused the key in {name} (named by api_key_env): check that {name} holds its key"
    elif is_openrouter(base_url):
        refused = (
            f"OpenRouter refused the key in {name}: check that it holds a current OpenRouter key "
            "(https://openrouter.ai/settings/keys)"
        )
    else:
        refused = (
            f"{shown} refused the key in {name}: {name} goes to every endpoint but OpenRouter, so it must "
            "hold this endpoint's key; keep another provider's key in a variable of its own and name it with "
            f"api_key_env in [tool.zorkgpt.llm]{also}"
        )
    forbidden = (
        f"{shown} took the key in {name} but refused the request: check that the key's account or project "
        f"may use model {model!r}"
    )
    return KeyUse(refused, forbidden)


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


def _offline_warning(llm: LLMSettings, base_url: str, source: str, model: str) -> str:
    hint = key_hint(llm, base_url)
    return (
        f"No API key for {shown_endpoint(base_url, source)} (set {key_variable(llm, base_url)}, name another "
        f"variable with api_key_env in [tool.zorkgpt.llm], or point agent_base_url / client_base_url at a "
        f"local server such as http://localhost:11434/v1): using the OFFLINE SCRIPTED MODEL instead of "
        f"{model} — its actions come from a fixed list of commands, not from an LLM."
        + (f" {hint}." if hint else "")
    )


@define(kw_only=True)
class ModelChoice:
    """Which chat model an episode talks to, decided once from the settings (no async resources).

    The choice outlives event loops: the plain ``bridge.get_action()`` path opens the model in every
    ``trio.run`` with :meth:`open`, and the offline scripted model is the same object each time, so
    its place in the walkthrough survives between calls. An HTTP client is opened per :meth:`open`.

    Attributes:
        base_url: the endpoint (``base_url_override``, else ``agent_base_url``, else
            ``client_base_url``, else ``OPENAI_BASE_URL``, else OpenRouter: :func:`pick_base_url`).
        model: the model name (``model_override``, else ``agent_model``, else :data:`DEFAULT_MODEL`).
        scripted: the offline scripted model when there is no API key and the endpoint is not
            local; ``None`` when a real endpoint is used.
        notice: the one-line explanation shown when the scripted model plays.
        base_url_from: where :attr:`base_url` came from (``"override"``, ``"agent_base_url"``,
            ``"client_base_url"``, ``"OPENAI_BASE_URL"`` or ``"default"``).
        key_use: what a 401 or 403 of the endpoint says about the key (:func:`key_use`: which
            variable's key is sent, or why none is); ``None`` when the scripted model plays.
    """

    base_url: str
    model: str
    scripted: ScriptedModel | None
    notice: str | None
    _api_key: str | None = field(repr=False, alias="api_key")
    _settings: Settings = field(repr=False, alias="settings")
    base_url_from: str = "default"
    key_use: KeyUse | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        model_override: str | None = None,
        base_url_override: str | None = None,
        walkthrough: Sequence[str] | None = None,
        base_url_environ: Mapping[str, str] | None = None,
    ) -> ModelChoice:
        """Decide between a real endpoint and the offline scripted model (see :func:`resolve_api_key`).

        Args:
            settings: the loaded settings.
            model_override: e.g. from ``--model``.
            base_url_override: e.g. from ``--base-url``.
            walkthrough: the commands for the scripted model.
            base_url_environ: where ``OPENAI_BASE_URL`` is read (``os.environ`` by default); an eval
                passes the driver's, so a Ray worker plays against the endpoint the run announced.
                The API key is always read from this process's environment.

        Raises:
            ConfigError: ``base_url_override`` is a URL the HTTP client cannot use (``localhost:8080/v1``
                without ``http://``): without an API key it would otherwise let the offline scripted
                model play without a word about it; or ``OPENAI_BASE_URL`` decides and is such a URL.
                (A base URL from the settings is checked with them.)
        """
        if base_url_override:
            check_base_url(base_url_override)
        llm = settings.llm
        base_url, source = pick_base_url(llm, base_url_override, environ=base_url_environ)
        model = model_override or llm.agent_model or DEFAULT_MODEL
        api_key, _ = resolve_api_key(llm, base_url)
        if api_key is None and not is_local_base_url(base_url):
            commands = DEFAULT_WALKTHROUGH if walkthrough is None else walkthrough
            return cls(
                base_url=base_url,
                model=model,
                scripted=ScriptedModel(commands),
                notice=_offline_warning(llm, base_url, source, model),
                api_key=None,
                settings=settings,
                base_url_from=source,
            )
        return cls(
            base_url=base_url,
            model=model,
            scripted=None,
            notice=None,
            api_key=api_key,
            settings=settings,
            base_url_from=source,
            key_use=key_use(llm, base_url, model),
        )

    @property
    def endpoint(self) -> str:
        """:attr:`base_url` for messages: no user info; ``(from OPENAI_BASE_URL)`` when it came from there."""
        return shown_endpoint(self.base_url, self.base_url_from)

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
            key_use=self.key_use,
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
