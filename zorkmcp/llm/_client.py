"""The OpenAI-compatible chat-completions client over one ``httpx2.AsyncClient``.

``open_llm_client`` owns the HTTP client (``async with``), so connections are kept alive
for as long as the caller's context lives. Requests are retried with exponential backoff
on 429, 5xx, an empty 200 (a server that failed after its headers), a streamed answer cut short,
and transport failures; the waits are ``anyio.sleep`` calls, so they run on the event loop's clock
(trio's is virtual in tests) and a cancelled caller stops waiting at once.
The error's ``code`` and text overrule its status three times: OpenAI's 429 ``insufficient_quota`` is
not retried (no wait brings credit back), nor is its 429 ``Request too large … on tokens per min``
(one request larger than the per-minute limit never fits; the engine asks again without the turn's
tool calls, as for a context window exceeded), and Groq's 400 ``tool_use_failed`` (a tool call the
model wrote and the server could not parse) is retried, as a 5xx.

Two refusals are not retried that way. An endpoint that refuses ``response_format`` (the forced
final call's JSON schema, Requirement 4.6) gets the request again at once without it, and never
again from that client; one that refuses ``tools`` raises :class:`~zorkmcp.errors.ModelCompatibilityError`
(Requirement 4.5) saying how to play without them.
"""

from __future__ import annotations

import functools
import json
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.to_thread
import attrs
import httpx2
from attrs import frozen

from .._netfail import explain_connect, ssl_error, tls_is_permanent
from .._urls import safe_url, url_problem
from ..config import RetrySettings
from ..errors import (
    LLMError,
    LLMProviderError,
    LLMResponseError,
    LLMTransportError,
    ModelCompatibilityError,
)
from ..observability import EventSink, NullSink
from ._compat import exceeds_token_rate, refuses_response_format, refuses_tools, tools_remedy
from ._messages import check_tools, with_cache_control
from ._models import CompletionRequest, LLMResponse
from ._parse import (
    GENERATION_FAILED,
    QUOTA_EXHAUSTED,
    STREAM_CUT,
    KeyUse,
    Scrubber,
    body_retry_delay,
    error_codes,
    http_error,
    make_scrubber,
    parse_completion,
)
from ._retry import backoff_delay, default_rng, parse_retry_after
from ._urls import chat_completions_url, is_local_base_url, is_openrouter

if TYPE_CHECKING:
    import random
    import ssl
    from collections.abc import AsyncIterator, Mapping


__all__ = ["DEFAULT_RETRY", "OPENROUTER_HEADERS", "LLMClient", "new_http_client", "open_llm_client"]

DEFAULT_RETRY = RetrySettings()
"""The ``[tool.zorkgpt.retry]`` defaults."""

OPENROUTER_HEADERS: Mapping[str, str] = {"HTTP-Referer": "https://zorkgpt.com", "X-Title": "zorkmcp"}
"""App attribution headers sent by default when the base URL is OpenRouter's."""

_RetryKind = Literal["rate_limit", "server_error", "transport"]
_Refused = Literal["response_format", "tools"]


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The TLS context of every model client: loading the CA bundle costs 20-100 ms, so once per process.

    It honours ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``, else trusts the system's CAs (as the MCP SDK's
    remote sessions do); the first call reads from disk (call it from a worker thread).
    """
    return httpx2.create_ssl_context(trust_env=True)


def new_http_client(base_url: str, *, keepalive: int | None = None) -> httpx2.AsyncClient:
    """A model endpoint's ``httpx2.AsyncClient``: no timeout of its own, the shared TLS context.

    Each attempt's deadline is a cancel scope instead. A local base URL never goes through a proxy
    (``trust_env`` off); a remote one honours ``HTTP(S)_PROXY``. The first call reads the CA files
    and every call the proxy variables: call it from a worker thread.

    Args:
        base_url: the endpoint.
        keepalive: the most idle connections kept (``None``: httpx2's default); connections are
            not capped.
    """
    settings: dict[str, Any] = {
        "timeout": httpx2.Timeout(None),
        "verify": shared_ssl_context(),
        "trust_env": not is_local_base_url(base_url),
    }
    if keepalive is not None:
        settings["limits"] = httpx2.Limits(max_connections=None, max_keepalive_connections=keepalive)
    return httpx2.AsyncClient(**settings)


@frozen
class _Failure:
    """One failed attempt: the error to raise if no retry follows, and whether one may.

    ``refused``: the request parameter the endpoint's error names as one it does not take.
    """

    error: LLMError
    kind: _RetryKind | None
    retry_after: float | None = None
    cause: BaseException | None = None
    refused: _Refused | None = None


def _kind_for_status(status: int | None) -> _RetryKind | None:
    if status == 429:
        return "rate_limit"
    if status is not None and 500 <= status <= 599:
        return "server_error"
    return None  # never retry other 4xx


def _kind_for_answer(status: int, body: bytes) -> _RetryKind | None:
    """Whether an error answer may be retried: by its status, then by the error's ``code`` and text.

    OpenAI's 429 ``insufficient_quota`` is no rate limit (no wait brings credit back), nor is its 429
    ``Request too large for gpt-4o … on tokens per min (TPM): Limit 30000, Requested 45000`` (a request
    larger than the per-minute limit never fits, however long the wait); Groq's 400
    ``tool_use_failed`` is a generation that failed (the model wrote a call the server could not
    parse), which a new sample usually mends, as a 5xx.
    """
    codes = error_codes(body) if status in (400, 429) else frozenset()
    if status == 429 and QUOTA_EXHAUSTED in codes:
        return None
    if status == 429 and exceeds_token_rate(body.decode("utf-8", errors="replace")):
        return None
    if status == 400 and GENERATION_FAILED in codes:
        return "server_error"
    return _kind_for_status(status)


def _refused(error: LLMError, payload: Mapping[str, Any]) -> _Refused | None:
    """Which parameter the request sent that an error answer (not a 429) says the endpoint refuses."""
    if error.status is None or error.status < 400 or error.status == 429:
        return None
    text = error.provider_message or error.body_excerpt
    if "response_format" in payload and refuses_response_format(text):
        return "response_format"
    if "tools" in payload and refuses_tools(text):
        return "tools"
    return None


def _taken_ids(messages: list[dict[str, Any]]) -> frozenset[str]:
    """The tool call ids a conversation holds: its assistant messages' calls and the tools' answers."""
    taken: set[str] = set()
    for message in messages:
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                taken.add(call["id"])
        if isinstance(message.get("tool_call_id"), str):
            taken.add(message["tool_call_id"])
    return frozenset(taken)


class LLMClient:
    """Chat completions against one OpenAI-compatible endpoint (seeds 000 §2).

    Normally made by :func:`open_llm_client`, which owns the ``httpx2.AsyncClient``; the
    client given here is borrowed, never closed.

    Args:
        http: the HTTP client to send requests with.
        base_url: e.g. ``https://openrouter.ai/api/v1`` (requests go to ``{base_url}/chat/completions``).
        model: the model name sent with every request.
        api_key: sent as ``Authorization: Bearer`` when given; never shown anywhere.
        retry: backoff and timeout settings (``[tool.zorkgpt.retry]``).
        extra_headers: headers sent with every request.
        rng: the jitter source (tests pin it); the module's own ``random.Random`` by default.
        events: where retries are reported (``llm_retry`` events and episode-log lines), and an
            endpoint that refuses ``response_format`` (``llm_response_format_dropped``, once).
        cache_control: mark system and user messages for prompt caching (Requirement 4.7).
        key_use: what a 401 or 403 says about the key: which variable's key was sent, or why none
            was (``key_use`` in ``zorkmcp.llm._select`` writes it from the settings); ``None``: "check
            the API key" (the key, if any, was handed over, not read from a variable).
    """

    scripted = False

    def __init__(
        self,
        *,
        http: httpx2.AsyncClient,
        base_url: str,
        model: str,
        api_key: str | None = None,
        retry: RetrySettings = DEFAULT_RETRY,
        extra_headers: Mapping[str, str] | None = None,
        rng: random.Random | None = None,
        events: EventSink | None = None,
        cache_control: bool = True,
        key_use: KeyUse | None = None,
    ) -> None:
        self._http = http
        self._base_url = base_url
        self._url = chat_completions_url(base_url)
        self._shown_url = safe_url(self._url)  # in messages: no user info, query or fragment
        self._model = model
        self._api_key = api_key or None
        self._retry = retry
        self._headers = dict(extra_headers or {})
        self._rng = rng if rng is not None else default_rng()
        self._events: EventSink = events if events is not None else NullSink()
        self._cache_control = cache_control
        self._scrub: Scrubber = make_scrubber([self._api_key])
        self._key_use = key_use if key_use is not None else KeyUse.given()
        self._answers = 0  # 2xx answers parsed: makes generated tool call ids unique per client
        self._response_format = True  # False once the endpoint refused it: never sent again

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def base_url(self) -> str:
        """The configured base URL."""
        return self._base_url

    @property
    def has_api_key(self) -> bool:
        """Whether requests carry an ``Authorization`` header (the key itself is never exposed)."""
        return self._api_key is not None

    @property
    def key_use(self) -> KeyUse:
        """What a 401 or 403 from the endpoint says about the key (names a variable, never the key)."""
        return self._key_use

    @property
    def headers(self) -> dict[str, str]:
        """The extra headers sent with every request (``Authorization`` is not among them)."""
        return dict(self._headers)

    @property
    def retry(self) -> RetrySettings:
        """The retry settings in force."""
        return self._retry

    @property
    def sends_response_format(self) -> bool:
        """Whether ``response_format`` is sent: ``False`` once the endpoint refused it (Requirement 4.6)."""
        return self._response_format

    def __repr__(self) -> str:
        key = "<set>" if self._api_key else None
        return f"LLMClient(model={self._model!r}, base_url={safe_url(self._base_url)!r}, api_key={key})"

    async def complete(self, request: CompletionRequest, /) -> LLMResponse:
        """Send one chat completion request, retrying as ``[tool.zorkgpt.retry]`` allows.

        Fields left ``None`` are not sent; ``"stream": false`` always is (a server that streams
        anyway is read whole and its deltas joined). ``response_format`` is sent exactly as given
        until the endpoint refuses it: an error answer naming it (``response_format type
        json_schema is not supported``) is followed at once by the same request without it, not
        counted as a retry, and it is not sent again by this client (an
        ``llm_response_format_dropped`` event and a warning say so, once); the answer's content is
        then the caller's to parse. Tool call ids never repeat within the conversation: a provider's
        id that the request's messages (or the same answer) already hold is replaced by a fresh one.
        This client owns prompt caching: with ``cache_control`` on, system and user messages get
        ``cache_control`` (Requirement 4.7); with it off, none is sent. Cancelling the caller's
        scope aborts the request (and any backoff wait) at once.

        Args:
            request: the messages, tools and sampling of this completion.

        Returns:
            The parsed response.

        Raises:
            ValueError: a tool schema is not in OpenAI format (checked before anything is sent).
            ModelCompatibilityError: the endpoint refused the request's ``tools`` (Requirement 4.5:
                Ollama's ``does not support tools``, vLLM without ``--enable-auto-tool-choice``…);
                the message says what to do; the endpoint's error is its ``__cause__``.
            LLMHTTPError: a non-2xx answer (after retries for 429 and 5xx).
            LLMResponseError: HTML, non-JSON, no ``choices`` list, or a malformed message or stream.
            LLMProviderError: a provider error object inside a 200.
            LLMTransportError: connect errors, dropped connections and timeouts, after retries.
        """
        payload = self._payload(request)
        headers = {"Accept": "application/json", **self._headers, **(request.extra_headers or {})}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key}"
        retries = 0
        while True:
            outcome = await self._attempt(payload, headers)
            if isinstance(outcome, LLMResponse):
                return outcome
            if outcome.refused == "response_format":
                self._drop_response_format(outcome.error)
                payload = {key: value for key, value in payload.items() if key != "response_format"}
                continue
            if outcome.refused == "tools":
                raise ModelCompatibilityError(
                    f"the endpoint refused tools for model '{self._model}' "
                    f"({outcome.error.provider_message or outcome.error}): {tools_remedy(str(outcome.error))}"
                ) from outcome.error
            if not self._may_retry(outcome.kind) or retries >= self._retry.max_retries:
                raise self._final_error(outcome.error, retries + 1) from outcome.cause
            if outcome.retry_after is not None:
                delay = min(outcome.retry_after, self._retry.max_delay)
            else:
                delay = backoff_delay(retries, self._retry, self._rng)
            retries += 1
            self._report_retry(outcome, retries, delay)
            await anyio.sleep(delay)

    def _payload(self, request: CompletionRequest) -> dict[str, Any]:
        messages = request.messages
        if self._cache_control:
            sent = with_cache_control(messages)
        else:
            sent = [{k: v for k, v in m.items() if k != "cache_control"} for m in messages]
        payload: dict[str, Any] = {"model": self._model, "messages": sent, "stream": False}
        stop = request.stop
        optional: dict[str, Any] = {
            **attrs.asdict(request.sampling),
            "stop": stop if stop is None or isinstance(stop, str) else list(stop),
            "tool_choice": request.tool_choice,
            # seeds 000 §3.2: only the forced final call; never to an endpoint that refused it
            "response_format": request.response_format if self._response_format else None,
        }
        if request.tools:
            check_tools(request.tools)
            payload["tools"] = list(request.tools)
        payload.update({key: value for key, value in optional.items() if value is not None})
        return payload

    async def _attempt(self, payload: dict[str, Any], headers: dict[str, str]) -> LLMResponse | _Failure:
        """One request: the parsed response, or why it failed and whether a retry may follow."""
        response = await self._post(payload, headers)
        if isinstance(response, _Failure):
            return response
        content_type = response.headers.get("content-type", "")
        if not response.is_success:
            failure = self._http_failure(response, content_type)
            return attrs.evolve(failure, refused=_refused(failure.error, payload))
        self._answers += 1
        try:
            return parse_completion(
                id_prefix=f"call_{self._answers}",
                taken_ids=_taken_ids(payload["messages"]),
                status=response.status_code,
                body=response.content,
                content_type=content_type,
                url=self._shown_url,
                base_url=safe_url(self._base_url),
                model=self._model,
                scrub=self._scrub,
                key_use=self._key_use,
            )
        except LLMProviderError as error:  # OpenRouter reports upstream 429/5xx inside a 200
            kind = _kind_for_status(error.status)
            if exceeds_token_rate(f"{error.provider_message or ''} {error.body_excerpt}"):
                kind = None  # an upstream's 429 Request too large … on tokens per min: no wait helps
            return _Failure(error, kind, refused=_refused(error, payload))
        except LLMResponseError as error:
            # an empty 200 is a server that failed after its headers (a crashed worker, a proxy that
            # lost its upstream): retried as a 5xx; a stream cut short as a dropped connection; any
            # other unreadable answer would come again
            if not response.content.strip():
                return _Failure(error, "server_error")
            return _Failure(error, "transport" if str(error).endswith(STREAM_CUT) else None)

    async def _post(self, payload: dict[str, Any], headers: dict[str, str]) -> httpx2.Response | _Failure:
        timeout = self._retry.timeout_seconds
        with anyio.move_on_after(timeout):
            try:
                # ASCII JSON (json.dumps' default), not httpx2's json= (ensure_ascii=False): a lone
                # surrogate a model sent and the engine echoes back must not break the request.
                body = json.dumps(payload).encode("ascii")
                headers = {**headers, "content-type": "application/json"}
                return await self._http.post(self._url, content=body, headers=headers)
            except httpx2.ConnectError as exc:
                # a certificate that cannot be verified, a port that does not speak TLS: no retry helps
                tls = ssl_error(exc)
                kind: _RetryKind | None = None if tls is not None and tls_is_permanent(tls) else "transport"
                return _Failure(self._connect_error(exc), kind, cause=exc)
            except (
                httpx2.TimeoutException,
                httpx2.NetworkError,
                httpx2.RemoteProtocolError,
                httpx2.ProxyError,
            ) as exc:
                return _Failure(self._transport_error(exc), "transport", cause=exc)
            except httpx2.DecodingError as exc:
                undecodable = LLMResponseError(
                    self._scrub(f"POST {self._shown_url}: the body could not be decoded: {exc}")
                )
                return _Failure(undecodable, None, cause=exc)
            except httpx2.HTTPError as exc:  # unsupported scheme, local protocol errors: retrying won't help
                return _Failure(self._transport_error(exc), None, cause=exc)
        timed_out = LLMTransportError(
            f"POST {self._shown_url}: no whole answer within {timeout:g}s (timeout_seconds in "
            "[tool.zorkgpt.retry] bounds each request, the last byte of its answer included)"
        )
        return _Failure(timed_out, "transport")

    def _http_failure(self, response: httpx2.Response, content_type: str) -> _Failure:
        kind = _kind_for_answer(response.status_code, response.content)
        retry_after = None
        if kind is not None:
            retry_after = parse_retry_after(
                response.headers.get("retry-after"), date=response.headers.get("date")
            )
            if retry_after is None:  # Gemini says it in the body (RetryInfo), not in a header
                retry_after = body_retry_delay(response.content)
        error = http_error(
            status=response.status_code,
            reason=response.reason_phrase or httpx2.codes.get_reason_phrase(response.status_code),
            body=response.content,
            content_type=content_type,
            url=self._shown_url,
            base_url=safe_url(self._base_url),
            scrub=self._scrub,
            location=response.headers.get("location"),
            key_use=self._key_use,
        )
        return _Failure(error, kind, retry_after)

    def _connect_error(self, exc: httpx2.ConnectError) -> LLMTransportError:
        """Why the connect failed (:func:`~zorkmcp._netfail.explain_connect`), of the base URL as shown."""
        why = explain_connect(exc, safe_url(self._base_url))
        return LLMTransportError(self._scrub(f"POST {self._shown_url} failed: {why}"))

    def _transport_error(self, exc: httpx2.HTTPError) -> LLMTransportError:
        detail = str(exc) or type(exc).__name__
        return LLMTransportError(
            self._scrub(f"POST {self._shown_url} failed: {type(exc).__name__}: {detail}")
        )

    def _may_retry(self, kind: _RetryKind | None) -> bool:
        if kind == "rate_limit":
            return self._retry.retry_on_rate_limit
        if kind == "server_error":
            return self._retry.retry_on_server_error
        if kind == "transport":
            return self._retry.retry_on_timeout
        return False

    def _final_error(self, error: LLMError, attempts: int) -> LLMError:
        if attempts == 1:
            return error
        return type(error)(
            f"{error} (gave up after {attempts} attempts)",
            status=error.status,
            provider_message=error.provider_message,
            body_excerpt=error.body_excerpt,
        )

    def _drop_response_format(self, error: LLMError) -> None:
        self._response_format = False
        said = error.provider_message or str(error)
        self._events.emit("llm_response_format_dropped", status=error.status, error=said)
        self._events.log(
            "WARNING",
            f"The model endpoint does not take response_format (HTTP {error.status}: {said}); the "
            "request is sent again without it, and so are later ones: the answer is read from its text",
        )

    def _report_retry(self, failure: _Failure, retry: int, delay: float) -> None:
        line = (
            f"LLM request failed ({failure.error}); retry {retry}/{self._retry.max_retries} in {delay:.2f}s"
            + (" (Retry-After)" if failure.retry_after is not None else "")
        )
        self._events.emit(
            "llm_retry",
            retry=retry,
            max_retries=self._retry.max_retries,
            delay=delay,
            kind=failure.kind,
            status=failure.error.status,
            error=str(failure.error),
        )
        self._events.log("WARNING", line)


@asynccontextmanager
async def open_llm_client(
    *,
    base_url: str,
    model: str,
    api_key: str | None = None,
    retry: RetrySettings = DEFAULT_RETRY,
    extra_headers: Mapping[str, str] | None = None,
    rng: random.Random | None = None,
    events: EventSink | None = None,
    cache_control: bool = True,
    key_use: KeyUse | None = None,
) -> AsyncIterator[LLMClient]:
    """Open an :class:`LLMClient` on one ``httpx2.AsyncClient`` that lives as long as the context.

    OpenRouter's attribution headers (:data:`OPENROUTER_HEADERS`) are added when the base URL
    is OpenRouter's; ``extra_headers`` override them. A local base URL (localhost, 127.0.0.1,
    ::1) ignores proxy settings from the environment. Each attempt gets
    ``retry.timeout_seconds`` in total.

    Args:
        base_url: e.g. ``https://openrouter.ai/api/v1`` or ``http://localhost:11434/v1``.
        model: the model name sent with every request.
        api_key: sent as ``Authorization: Bearer`` when given.
        retry: ``[tool.zorkgpt.retry]``.
        extra_headers: headers sent with every request.
        rng: the jitter source (tests pin it).
        events: where retries (``llm_retry``) and a refused ``response_format``
            (``llm_response_format_dropped``) are reported.
        cache_control: mark system and user messages for prompt caching.
        key_use: what a 401 or 403 says about the key (:class:`LLMClient`).

    Yields:
        The client; the HTTP connections close when the context exits.

    Raises:
        ValueError: the HTTP client cannot use the base URL (not http(s), no host, a bad port…).
    """
    problem = url_problem(base_url, example="https://openrouter.ai/api/v1")
    if problem is not None:
        raise ValueError(f"the base URL {safe_url(base_url)} {problem}")
    headers = dict(OPENROUTER_HEADERS) if is_openrouter(base_url) else {}
    headers.update(extra_headers or {})
    async with await anyio.to_thread.run_sync(new_http_client, base_url) as http:
        yield LLMClient(
            http=http,
            base_url=base_url,
            model=model,
            api_key=api_key,
            retry=retry,
            extra_headers=headers,
            rng=rng,
            events=events,
            cache_control=cache_control,
            key_use=key_use,
        )
