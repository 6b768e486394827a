"""The LLM side of a turn: an OpenAI-compatible chat-completions client and an offline model.

- :func:`open_llm_client` / :class:`LLMClient`: OpenRouter, OpenAI or a local server
  (Ollama, llama.cpp, vLLM) by base URL alone, on one ``httpx.AsyncClient``, with retries.
- :class:`ScriptedModel`: the same interface without any network, for runs with no LLM.
- :class:`RecordingModel` / :class:`ReplayModel`: record an episode's exchanges to a cassette and
  replay them offline.
- :class:`MeteredModel` / :class:`ModelUse`: a model that counts the completions it answers and
  their tokens (what an episode's model use cost).
- :func:`open_chat_model`: picks one of the two from :class:`~zorkmcp.config.Settings`; the base
  URL by :func:`pick_base_url` (``--base-url``, the settings, ``OPENAI_BASE_URL``, OpenRouter), the
  key by :func:`key_variable` (``OPENROUTER_API_KEY`` only to OpenRouter, ``OPENAI_API_KEY`` only
  elsewhere, unless ``api_key_env`` names another).
- :class:`LLMResponse`, :class:`ToolCall`, :class:`FunctionCall`: the seeds' response models.
"""

from __future__ import annotations

from ._cassette import CassetteHeader as CassetteHeader
from ._cassette import RecordingModel as RecordingModel
from ._cassette import ReplayModel as ReplayModel
from ._client import DEFAULT_RETRY as DEFAULT_RETRY
from ._client import OPENROUTER_HEADERS as OPENROUTER_HEADERS
from ._client import LLMClient as LLMClient
from ._client import open_llm_client as open_llm_client
from ._compat import NO_TOOL_PATTERNS as NO_TOOL_PATTERNS
from ._compat import TOOL_PATTERNS as TOOL_PATTERNS
from ._compat import supports_tool_calling as supports_tool_calling
from ._messages import CACHE_CONTROL as CACHE_CONTROL
from ._messages import with_cache_control as with_cache_control
from ._metered import MeteredModel as MeteredModel
from ._metered import ModelUse as ModelUse
from ._models import ChatModel as ChatModel
from ._models import CompletionRequest as CompletionRequest
from ._models import FunctionCall as FunctionCall
from ._models import LLMResponse as LLMResponse
from ._models import ToolCall as ToolCall
from ._parse import KeyUse as KeyUse
from ._scripted import DEFAULT_WALKTHROUGH as DEFAULT_WALKTHROUGH
from ._scripted import ScriptedModel as ScriptedModel
from ._select import API_KEY_ENV_VARS as API_KEY_ENV_VARS
from ._select import BASE_URL_ENV as BASE_URL_ENV
from ._select import DEFAULT_BASE_URL as DEFAULT_BASE_URL
from ._select import DEFAULT_MODEL as DEFAULT_MODEL
from ._select import ModelChoice as ModelChoice
from ._select import describe_model as describe_model
from ._select import key_use as key_use
from ._select import key_variable as key_variable
from ._select import open_chat_model as open_chat_model
from ._select import pick_base_url as pick_base_url
from ._select import resolve_api_key as resolve_api_key
from ._select import sampling_arguments as sampling_arguments
from ._urls import is_local_base_url as is_local_base_url

__all__ = [
    "API_KEY_ENV_VARS",
    "BASE_URL_ENV",
    "CACHE_CONTROL",
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL",
    "DEFAULT_RETRY",
    "DEFAULT_WALKTHROUGH",
    "NO_TOOL_PATTERNS",
    "OPENROUTER_HEADERS",
    "TOOL_PATTERNS",
    "CassetteHeader",
    "ChatModel",
    "CompletionRequest",
    "FunctionCall",
    "KeyUse",
    "LLMClient",
    "LLMResponse",
    "MeteredModel",
    "ModelChoice",
    "ModelUse",
    "RecordingModel",
    "ReplayModel",
    "ScriptedModel",
    "ToolCall",
    "describe_model",
    "is_local_base_url",
    "key_use",
    "key_variable",
    "open_chat_model",
    "open_llm_client",
    "pick_base_url",
    "resolve_api_key",
    "sampling_arguments",
    "supports_tool_calling",
    "with_cache_control",
]
