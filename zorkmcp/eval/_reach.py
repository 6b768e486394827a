"""Before a run starts: can each model endpoint it will talk to be reached at all?

A wrong ``--base-url`` (a typo, a port, a server not started yet) fails no sooner than the model's
first request, and a request that cannot connect is retried: six attempts over about 31 s with the
default ``[tool.zorkgpt.retry]``. In a run every episode pays that, round after round of K episodes,
and the run ends with every episode failed (``zorkmcp eval --episodes 2 --base-url
http://127.0.0.1:9/v1``: 32 s, exit 1). One request per endpoint first stops such a run in
milliseconds with one line, before anything is written.

The probe is ``GET {base_url}/models`` through the run's own kind of pool (the same proxy and TLS
settings as its requests), closed as soon as the answer's headers arrive: any HTTP answer, even 401
or 404 (not every server lists its models), means the endpoint is there. Only a request that gets
no HTTP answer stops the run: no connection (refused, unknown host, a TLS error, none within
:data:`PROBE_SECONDS`) or a peer that does not speak HTTP. A server that connects but is slow to
answer is let through: the run's retries are for it.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Final

import anyio
import httpx2

from ..errors import ConfigError
from ._runner import endpoint_of, open_http_pools

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._spec import EpisodeSpec

__all__ = ["PROBE_SECONDS", "check_endpoints"]

PROBE_SECONDS: Final = 10.0
"""How long a probe may take to connect (and to get an answer's headers, which only slows it)."""


def check_endpoints(specs: Iterable[EpisodeSpec]) -> None:
    """Check that every model endpoint of ``specs`` answers HTTP, all at once (one request each).

    The offline scripted model has no endpoint. Call it with the episodes about to be played, in the
    process whose network the episodes will use (on a Ray cluster the workers may see another one).

    Raises:
        ConfigError: an endpoint got no HTTP answer. The one-line message names it, the arms that
            use it, why, and the settings that decide it.
    """
    arms: dict[str, list[str]] = {}
    for spec in {spec.arm: spec for spec in specs}.values():  # an arm's episodes share their model
        url = endpoint_of(spec)
        if url is not None:
            arms.setdefault(url, []).append(spec.arm)
    if not arms:
        return
    from .._bridge import run_trio

    failed = run_trio(partial(_unanswered, list(arms)))
    if failed:
        url, why = next(iter(failed.items()))
        more = f" (and {len(failed) - 1} more endpoint(s))" if len(failed) > 1 else ""
        names = ", ".join(arms[url])
        raise ConfigError(
            f"the model endpoint {url} of arm(s) {names} cannot be reached ({why}){more}; start it, or "
            "pass the right --base-url (or base_url in [[arms]], or agent_base_url in [tool.zorkgpt.llm])"
        )


async def _unanswered(urls: list[str]) -> dict[str, str]:
    """The endpoints that gave no HTTP answer, each with why, in the order of ``urls``."""
    why: dict[str, str] = {}

    async def probe(pool: httpx2.AsyncClient, url: str) -> None:
        try:
            async with pool.stream("GET", f"{url.rstrip('/')}/models", timeout=PROBE_SECONDS):
                pass  # the headers are the answer; the body is not read
        except httpx2.ReadTimeout:  # connected, and slow: the run's own retries are for that
            pass
        except (httpx2.TransportError, httpx2.InvalidURL) as exc:
            why[url] = f"{type(exc).__name__}: {exc}"

    async with open_http_pools(urls, concurrency=1) as pools, anyio.create_task_group() as tg:
        for url in urls:
            tg.start_soon(probe, pools[url], url)
    return {url: why[url] for url in urls if url in why}
