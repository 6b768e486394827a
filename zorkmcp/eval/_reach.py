"""Before a run starts: can each model endpoint it will talk to be reached, and does it answer?

A wrong ``--base-url`` (a typo, a port, a server not started yet) fails no sooner than the model's
first request, and a request that cannot connect is retried: six attempts over about 31 s with the
default ``[tool.zorkgpt.retry]``. In a run every episode pays that, round after round of K episodes,
and the run ends with every episode failed (``zorkmcp eval --episodes 2 --base-url
http://127.0.0.1:9/v1``: 32 s, exit 1). One request per endpoint first stops such a run in
milliseconds with one line, before anything is written.

The probe is ``GET {base_url}/models`` through the run's own kind of pool (the same proxy and TLS
settings as its requests), closed as soon as the answer's headers arrive: any HTTP answer, even 401
or 404 (not every server lists its models), means the endpoint is there. A request that gets no
HTTP answer stops the run: no connection (refused, unknown host, a TLS error, none within
:data:`PROBE_SECONDS`), a peer that does not speak HTTP, or one that takes the request and never
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
from ._runner import endpoint_of, open_http_pools

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ._spec import EpisodeSpec

__all__ = ["PROBE_SECONDS", "check_endpoints"]

PROBE_SECONDS: Final = 10.0
"""How long a probe may take to connect, and to get an answer before the run says it is waiting."""


@attrs.frozen
class _Endpoint:
    """One endpoint the run will use: its arms, and how long one of its requests waits for an answer."""

    url: str
    arms: tuple[str, ...]
    wait: float
    """The longest ``timeout_seconds`` of its arms, at least :data:`PROBE_SECONDS`."""
    attempts: int
    """Attempts of a request that gets no answer: ``max_retries + 1``, or 1 without ``retry_on_timeout``."""

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
        ConfigError: an endpoint got no HTTP answer. The one-line message names it, the arms that
            use it, why, and the settings that decide it.
    """
    endpoints: dict[str, _Endpoint] = {}
    for spec in {spec.arm: spec for spec in specs}.values():  # an arm's episodes share their model
        url = endpoint_of(spec)
        if url is None:
            continue
        retry = spec.settings.retry
        attempts = retry.max_retries + 1 if retry.retry_on_timeout else 1
        known = endpoints.get(url)
        endpoints[url] = _Endpoint(
            url=url,
            arms=(*known.arms, spec.arm) if known is not None else (spec.arm,),
            wait=max(PROBE_SECONDS, retry.timeout_seconds, known.wait if known is not None else 0.0),
            attempts=max(attempts, known.attempts if known is not None else 1),
        )
    if not endpoints:
        return
    from .._bridge import run_trio

    failed = run_trio(partial(_unanswered, list(endpoints.values()), tell))
    if failed:
        url, (why, remedy) = next(iter(failed.items()))
        more = f" (and {len(failed) - 1} more endpoint(s))" if len(failed) > 1 else ""
        raise ConfigError(f"{endpoints[url].named} {why}{more}; {remedy}")


_SETTINGS: Final = (
    "pass the right --base-url (or base_url in [[arms]], agent_base_url in [tool.zorkgpt.llm], "
    "or OPENAI_BASE_URL)"
)
_START: Final = f"start it, or {_SETTINGS}"


async def _unanswered(
    endpoints: list[_Endpoint], tell: Callable[[str], None] | None = None
) -> dict[str, tuple[str, str]]:
    """The endpoints that gave no HTTP answer, each with why and what to do, in the order given."""
    why: dict[str, tuple[str, str]] = {}

    async def probe(pool: httpx2.AsyncClient, endpoint: _Endpoint) -> None:
        url, shown = endpoint.url, safe_url(endpoint.url)
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
                        f"{url.rstrip('/')}/models",
                        timeout=httpx2.Timeout(None, connect=PROBE_SECONDS),
                        extensions={"trace": trace},
                    ):
                        pass  # the headers are the answer; the body is not read
            except httpx2.ConnectError as exc:  # refused, unknown host, the proxy, TLS: in words
                why[url] = (f"cannot be reached: {explain_connect(exc, shown)}", _START)
            except (httpx2.TransportError, httpx2.InvalidURL) as exc:
                why[url] = (f"cannot be reached ({type(exc).__name__}: {exc})", _START)
            tg.cancel_scope.cancel()
        if gave_up.cancelled_caught and not asked.is_set():  # connected at the last moment, say
            why[url] = (f"cannot be reached (no connection within {PROBE_SECONDS:g} s)", _START)
        elif gave_up.cancelled_caught:
            why[url] = (
                f"took the request (GET {shown}/models) and sent no answer in {endpoint.wait:g} s, as long "
                "as each request of the run waits (timeout_seconds in [tool.zorkgpt.retry]): every "
                f"episode would wait {endpoint.attempts} × {endpoint.wait:g} s for its model, and fail",
                "check that it is the model server (something there holds connections open without "
                f"answering), or {_SETTINGS}; a model that takes longer to load needs a higher "
                "timeout_seconds",
            )
        elif told and url not in why and tell is not None:
            tell(f"{endpoint.named} answered after {anyio.current_time() - told[0]:.0f} s; the run starts")

    async with open_http_pools([e.url for e in endpoints], concurrency=1) as pools:
        async with anyio.create_task_group() as tg:
            for endpoint in endpoints:
                tg.start_soon(probe, pools[endpoint.url], endpoint)
    return {e.url: why[e.url] for e in endpoints if e.url in why}
