"""Before a run starts: can each model endpoint it will talk to be reached, and does it answer?

A wrong ``--base-url`` (a typo, a port, a server not started yet) fails no sooner than the model's
first request, and a request that cannot connect is retried: six attempts over about 31 s with the
default ``[tool.zorkgpt.retry]``. In a run every episode pays that, round after round of K episodes,
and the run ends with every episode failed (``zorkmcp eval --episodes 2 --base-url
http://127.0.0.1:9/v1``: 32 s, exit 1). One request per endpoint first stops such a run in
milliseconds with one line, before anything is written.

The probe is ``GET {base_url}/models`` through the run's own kind of pool (the same proxy and TLS
settings as its requests) with the arm's own ``Authorization`` (its key goes where its requests go
anyway), closed as soon as the answer's headers arrive: any HTTP answer, even 404 (not every server
lists its models), means the endpoint is there. A 401 stops the run when no key was sent (a LiteLLM
proxy, a vLLM started with ``--api-key``, with only ``OPENROUTER_API_KEY`` set: it goes to OpenRouter
only) or when the endpoint says the key itself is wrong (OpenAI's ``invalid_api_key``): every
request of the run would be refused too, and the line says which variable's key was sent, or why
none was, and what to set. Another 401 to a key lets the run start: a key may be allowed to chat
and not to list models (OpenAI's restricted keys), and a server whose ``/models`` needs no key
(llama.cpp) is not asked for one either; its episodes then say the same about their 401.

A request that gets no HTTP answer stops the run: no connection (refused, unknown host, a TLS error,
none within :data:`PROBE_SECONDS`), a peer that does not speak HTTP, or one that takes the request and never
answers. The last is a port that holds connections open (a proxy with nothing behind it, a service
that is not the model's): every request of the run would wait its whole ``timeout_seconds`` (120 s)
six times over, 12 minutes per episode, with nothing to show for it. A model server that is slow to
answer, one still loading its model say, is given as long as a request of the run would wait for
it (``[tool.zorkgpt.retry] timeout_seconds``): after :data:`PROBE_SECONDS` without an answer a
warning line says whom the run waits for and how long; an answer within that lets the run start,
none stops it.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Final

import anyio
import attrs
import httpx2

from .._netfail import explain_connect
from .._urls import safe_url
from ..errors import ConfigError
from ..llm._parse import INVALID_KEY, KeyUse, error_codes, make_scrubber, provider_words
from ..llm._select import key_use, key_variable, resolve_api_key
from ._runner import open_http_pools

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ._spec import EpisodeSpec

__all__ = ["PROBE_SECONDS", "check_endpoints"]

PROBE_SECONDS: Final = 10.0
"""How long a probe may take to connect, and to get an answer before the run says it is waiting."""

_BODY_BYTES: Final = 8192
"""The most of a 401's body the probe reads (its error's code and words)."""


@attrs.frozen
class _Endpoint:
    """One endpoint the run will use: its arms, and how long one of its requests waits for an answer."""

    url: str
    arms: tuple[str, ...]
    wait: float
    """The longest ``timeout_seconds`` of its arms, at least :data:`PROBE_SECONDS`."""
    attempts: int
    """Attempts of a request that gets no answer: ``max_retries + 1``, or 1 without ``retry_on_timeout``."""
    key: str | None = attrs.field(default=None, repr=False)
    """The API key its arms' requests send (``None``: none), sent with the probe too; never shown."""
    key_use: KeyUse | None = None
    """What a 401 says about the key: which variable's was sent, or why none was."""

    @property
    def named(self) -> str:
        return f"the model endpoint {safe_url(self.url)} of arm(s) {', '.join(self.arms)}"


def check_endpoints(specs: Iterable[EpisodeSpec], *, tell: Callable[[str], None] | None = None) -> None:
    """Check that every model endpoint of ``specs`` answers HTTP, all at once (one request each).

    The offline scripted model has no endpoint. Call it with the episodes about to be played, in the
    process whose network the episodes will use (on a Ray cluster the workers may see another one).

    Args:
        specs: the episodes about to be played.
        tell: given each warning line while the check waits: an endpoint that took the request and
            has not answered in :data:`PROBE_SECONDS` (whom the run waits for, how long, and what it
            means), and the same endpoint's answer when it comes after all.

    Raises:
        ConfigError: an endpoint got no HTTP answer, or a 401 that every request of the run would
            get too (no key was sent, or the key is wrong). The one-line message names it, the arms
            that use it, why, and the settings that decide it (for a 401: which variable's key was
            sent, or why none was, and what to set).
    """
    endpoints: dict[tuple[str, str, bool], _Endpoint] = {}
    for spec in {spec.arm: spec for spec in specs}.values():  # an arm's episodes share their model
        choice = spec.model_choice()
        if choice.scripted is not None:
            continue
        url, llm = choice.base_url, spec.settings.llm
        key, _ = resolve_api_key(llm, url)
        retry = spec.settings.retry
        attempts = retry.max_retries + 1 if retry.retry_on_timeout else 1
        group = (url, key_variable(llm, url), key is not None)  # arms that send one key to one endpoint
        known = endpoints.get(group)
        endpoints[group] = _Endpoint(
            url=url,
            arms=(*known.arms, spec.arm) if known is not None else (spec.arm,),
            wait=max(PROBE_SECONDS, retry.timeout_seconds, known.wait if known is not None else 0.0),
            attempts=max(attempts, known.attempts if known is not None else 1),
            key=key,
            key_use=key_use(llm, url, choice.model, arm=True),
        )
    if not endpoints:
        return
    from .._bridge import run_trio

    failed = run_trio(partial(_unanswered, list(endpoints.values()), tell))
    if failed:
        endpoint, (why, remedy) = next(iter(failed.items()))
        more = f" (and {len(failed) - 1} more endpoint(s))" if len(failed) > 1 else ""
        raise ConfigError(f"{endpoint.named} {why}{more}; {remedy}")


_SETTINGS: Final = (
    "pass the right --base-url (or base_url in [[arms]], agent_base_url in [tool.zorkgpt.llm], "
    "or OPENAI_BASE_URL)"
)
_START: Final = f"start it, or {_SETTINGS}"


async def _refused(response: httpx2.Response, endpoint: _Endpoint) -> tuple[str, str] | None:
    """Why a 401 to the probe stops the run, and what to do; ``None``: the run's requests may fare better.

    No key sent, or one the endpoint calls wrong (``invalid_api_key``): every request would be refused.
    """
    if response.status_code != 401:
        return None
    body = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) >= _BODY_BYTES:
                break
    except httpx2.TransportError:  # the status said enough: the words are what came
        pass
    if endpoint.key is not None and INVALID_KEY not in error_codes(bytes(body)):
        return None  # a key allowed to chat and not to list models, say
    shown = safe_url(endpoint.url)
    scrub = make_scrubber([endpoint.key])
    words = provider_words(bytes(body), response.headers.get("content-type", ""), scrub)
    said = f" ({words})" if words else ""
    reason = response.reason_phrase or "Unauthorized"
    return f"answered GET {shown}/models with HTTP 401 {reason}{said}", (
        endpoint.key_use or KeyUse.given()
    ).unauthorized


async def _unanswered(
    endpoints: list[_Endpoint], tell: Callable[[str], None] | None = None
) -> dict[_Endpoint, tuple[str, str]]:
    """The endpoints that gave no HTTP answer, or a 401 every request would get, each with why and what
    to do, in the order given."""
    why: dict[_Endpoint, tuple[str, str]] = {}

    async def probe(pool: httpx2.AsyncClient, endpoint: _Endpoint) -> None:
        shown = safe_url(endpoint.url)
        asked = anyio.Event()  # the request is sent: what is left is the answer
        told: list[float] = []  # when the request was sent, once the wait was told

        async def trace(name: str, info: dict[str, Any]) -> None:  # httpcore's steps of the request
            del info
            if name.endswith(".receive_response_headers.started"):
                asked.set()

        async def still_waiting() -> None:
            await asked.wait()
            sent = anyio.current_time()
            await anyio.sleep(PROBE_SECONDS)
            if tell is not None:
                told.append(sent)
                tell(
                    f"{endpoint.named} took the request (GET {shown}/models) and has not answered in "
                    f"{PROBE_SECONDS:g} s; the run waits up to {endpoint.wait:g} s for it, as long as each "
                    "of its requests waits (timeout_seconds in [tool.zorkgpt.retry]): a model still "
                    "loading may answer yet, else the run stops"
                )

        async with anyio.create_task_group() as tg:
            if endpoint.wait > PROBE_SECONDS:
                tg.start_soon(still_waiting)
            try:
                with anyio.move_on_after(endpoint.wait) as gave_up:
                    async with pool.stream(
                        "GET",
                        f"{endpoint.url.rstrip('/')}/models",
                        headers={"Authorization": f"Bearer {endpoint.key}"} if endpoint.key else None,
                        timeout=httpx2.Timeout(None, connect=PROBE_SECONDS),
                        extensions={"trace": trace},
                    ) as response:  # the headers are the answer; the body is read of a 401 only
                        if (refused := await _refused(response, endpoint)) is not None:
                            why[endpoint] = refused
            except httpx2.ConnectError as exc:  # refused, unknown host, the proxy, TLS: in words
                why[endpoint] = (f"cannot be reached: {explain_connect(exc, shown)}", _START)
            except (httpx2.TransportError, httpx2.InvalidURL) as exc:
                why[endpoint] = (f"cannot be reached ({type(exc).__name__}: {exc})", _START)
            tg.cancel_scope.cancel()
        if gave_up.cancelled_caught and not asked.is_set():  # connected at the last moment, say
            why[endpoint] = (f"cannot be reached (no connection within {PROBE_SECONDS:g} s)", _START)
        elif gave_up.cancelled_caught:
            why[endpoint] = (
                f"took the request (GET {shown}/models) and sent no answer in {endpoint.wait:g} s, as long "
                "as each request of the run waits (timeout_seconds in [tool.zorkgpt.retry]): every "
                f"episode would wait {endpoint.attempts} × {endpoint.wait:g} s for its model, and fail",
                "check that it is the model server (something there holds connections open without "
                f"answering), or {_SETTINGS}; a model that takes longer to load needs a higher "
                "timeout_seconds",
            )
        elif told and endpoint not in why and tell is not None:
            tell(f"{endpoint.named} answered after {anyio.current_time() - told[0]:.0f} s; the run starts")

    async with open_http_pools([e.url for e in endpoints], concurrency=1) as pools:
        async with anyio.create_task_group() as tg:
            for endpoint in endpoints:
                tg.start_soon(probe, pools[endpoint.url], endpoint)
    return {e: why[e] for e in endpoints if e in why}
