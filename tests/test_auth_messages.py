"""A 401 or 403 from the model endpoint says which variable's key was sent, or why none was.

Before: "— check the API key", whatever went over the wire. Since each key goes to its own host only
(``OPENROUTER_API_KEY`` to OpenRouter, ``OPENAI_API_KEY`` to every other endpoint, ``api_key_env``
anywhere), a LiteLLM proxy or a vLLM started with ``--api-key`` on localhost gets *no* key when only
``OPENROUTER_API_KEY`` is set, and "check the API key" sent the user to look at a key that was never
sent. Now the line names the variable whose key was refused (never its value), or says no key was sent
and what to set; ``zorkmcp eval`` stops before anything starts when its probe (``GET /models``) gets
such a 401, rather than record it in every episode. Real loopback servers (tests/llm_server.py).
"""

from __future__ import annotations

import io
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest
import trio
from eval_support import episode_records
from llm_server import LLMServer, RecordedRequest, Reply, agent_reply, json_reply, provider_error_reply
from llm_server import llm_server_fixture as llm_server_fixture  # the llm_server fixture
from play_support import write_project
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main
from zorkmcp.config import LLMSettings, RetrySettings, Settings
from zorkmcp.errors import LLMHTTPError, LLMProviderError
from zorkmcp.llm import CompletionRequest, ModelChoice

if TYPE_CHECKING:
    from pathlib import Path

OR_KEY = "sk-or-v1-AUTH-OPENROUTER-SECRET-1"
OA_KEY = "sk-proj-AUTH-OPENAI-SECRET-2abcd"
GROQ_KEY = "gsk_AUTH-GROQ-SECRET-3"
VARIABLES = (
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GROQ_API_KEY",
    "GAME",
    "ZORKMCP_GAME_SEED",
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
)
USER = [{"role": "user", "content": "hi"}]

LITELLM_401 = json_reply(
    {
        "error": {
            "message": "Authentication Error, No api key passed in.",
            "type": "auth_error",
            "param": "None",
            "code": "401",
        }
    },
    status=401,
)
"""What a LiteLLM proxy started with a master key answers a request without one."""

OPENAI_401 = json_reply(
    {
        "error": {
            "message": "Incorrect API key provided: sk-proj-****************abcd. You can find your API key "
            "at https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    },
    status=401,
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _settings(**llm: Any) -> Settings:
    return Settings(llm=LLMSettings(agent_model="m", **llm), retry=RetrySettings(jitter_factor=0))


async def _refusal(settings: Settings) -> str:
    """The error the model's first request ends with, as ``play``, a Bridge and sampling open it."""
    choice = ModelChoice.from_settings(settings)
    async with choice.open() as model:
        with pytest.raises((LLMHTTPError, LLMProviderError)) as raised:
            await model.complete(CompletionRequest(USER))
    return str(raised.value)


# --- what the client says ----------------------------------------------------------------------


async def test_a_local_proxy_that_got_no_key_says_the_openrouter_key_goes_to_openrouter_only(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", OR_KEY)
    llm_server.script(LITELLM_401)
    base = llm_server.base_url
    said = await _refusal(_settings(client_base_url=base))
    assert "authorization" not in llm_server.requests[0].headers
    assert said == (
        f"POST {base}/chat/completions answered HTTP 401 Unauthorized: Authentication Error, No api key "
        f"passed in. — no API key was sent to {base}: OPENROUTER_API_KEY is set but only sent to OpenRouter; "
        'export this endpoint\'s key as OPENAI_API_KEY, or set api_key_env = "OPENROUTER_API_KEY" in '
        "[tool.zorkgpt.llm]"
    )


async def test_a_local_server_that_got_no_key_says_which_variable_to_set(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"error": "Unauthorized"}, status=401))  # vLLM's --api-key
    base = llm_server.base_url
    assert await _refusal(_settings(client_base_url=base)) == (
        f"POST {base}/chat/completions answered HTTP 401 Unauthorized: Unauthorized — no API key was sent to "
        f"{base}: OPENAI_API_KEY is not set; export this endpoint's key as OPENAI_API_KEY, or name the "
        "variable that holds it with api_key_env in [tool.zorkgpt.llm]"
    )


async def test_a_refused_openai_key_is_named_and_the_provider_words_keep_no_key(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", OR_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OA_KEY)
    echoed = {"error": {"message": f"Invalid API Key: {OA_KEY}", "code": "invalid_api_key"}}  # whole
    llm_server.script(OPENAI_401, json_reply(echoed, status=401))
    base = llm_server.base_url
    hint = (
        f"{base} refused the key in OPENAI_API_KEY: OPENAI_API_KEY goes to every endpoint but OpenRouter, so "
        "it must hold this endpoint's key; keep another provider's key in a variable of its own and name it "
        "with api_key_env in [tool.zorkgpt.llm]"
    )
    assert await _refusal(_settings(client_base_url=base)) == (
        f"POST {base}/chat/completions answered HTTP 401 Unauthorized: Incorrect API key provided: "
        "sk-proj-****************abcd. You can find your API key at "
        f"https://platform.openai.com/account/api-keys. — {hint}"
    )
    said = await _refusal(_settings(client_base_url=base))
    assert said == (
        f"POST {base}/chat/completions answered HTTP 401 Unauthorized: Invalid API Key: [REDACTED] — {hint}"
    )
    assert [r.headers["authorization"] for r in llm_server.requests] == [f"Bearer {OA_KEY}"] * 2


async def test_api_key_env_names_the_variable_whose_key_was_refused(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", GROQ_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OA_KEY)
    llm_server.script(json_reply({"error": {"message": "Invalid API Key"}}, status=401))
    base = llm_server.base_url
    assert await _refusal(_settings(client_base_url=base, api_key_env="GROQ_API_KEY")) == (
        f"POST {base}/chat/completions answered HTTP 401 Unauthorized: Invalid API Key — {base} refused the "
        "key in GROQ_API_KEY (named by api_key_env): check that GROQ_API_KEY holds its key"
    )
    assert llm_server.requests[0].headers["authorization"] == f"Bearer {GROQ_KEY}"


async def test_a_403_says_the_key_was_taken_and_may_not_use_the_model(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OA_KEY)
    words = "Project `proj_x` does not have access to model `gpt-5`"
    llm_server.script(json_reply({"error": {"message": words, "code": "model_not_found"}}, status=403))
    base = llm_server.base_url
    assert await _refusal(_settings(client_base_url=base)) == (
        f"POST {base}/chat/completions answered HTTP 403 Forbidden: {words} — {base} took the key in "
        "OPENAI_API_KEY but refused the request: check that the key's account or project may use model 'm'"
    )


def _through_proxy(monkeypatch: pytest.MonkeyPatch, proxy: LLMServer) -> None:
    """Requests to http://openrouter.ai go to the loopback server, as to a forward proxy."""
    monkeypatch.setenv("HTTP_PROXY", proxy.base_url.removesuffix("/v1"))


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (json_reply({"error": {"message": "User not found.", "code": 401}}, status=401), "User not found."),
        (
            json_reply({"error": {"message": "No auth credentials found", "code": 401}}, status=401),
            "No auth credentials found",
        ),
    ],
)
async def test_a_key_openrouter_refuses_is_named_as_the_openrouter_key(
    answer: Reply, words: str, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _through_proxy(monkeypatch, llm_server)
    monkeypatch.setenv("OPENROUTER_API_KEY", OR_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OA_KEY)
    llm_server.script(answer)
    assert await _refusal(_settings(client_base_url="http://openrouter.ai/api/v1")) == (
        f"POST http://openrouter.ai/api/v1/chat/completions answered HTTP 401 Unauthorized: {words} — "
        "OpenRouter refused the key in OPENROUTER_API_KEY: check that it holds a current OpenRouter key "
        "(https://openrouter.ai/settings/keys)"
    )
    [request] = llm_server.requests
    assert (request.path, request.headers["authorization"]) == (
        "http://openrouter.ai/api/v1/chat/completions",
        f"Bearer {OR_KEY}",
    )


async def test_openrouters_401_inside_a_200_says_the_same(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _through_proxy(monkeypatch, llm_server)
    monkeypatch.setenv("OPENROUTER_API_KEY", OR_KEY)
    llm_server.script(provider_error_reply("User not found.", code=401))
    assert await _refusal(_settings(client_base_url="http://openrouter.ai/api/v1")) == (
        "POST http://openrouter.ai/api/v1/chat/completions answered HTTP 200 with a provider error (code "
        "401): User not found. — OpenRouter refused the key in OPENROUTER_API_KEY: check that it holds a "
        "current OpenRouter key (https://openrouter.ai/settings/keys)"
    )


# --- zorkmcp play ------------------------------------------------------------------------------


def _project(folder: Path) -> Path:
    logs = {
        "json_log_file": str(folder / "logs" / "events.jsonl"),
        "episode_log_file": str(folder / "logs" / "ep.log"),
    }
    return write_project(folder, files=logs, mcp_config=None, enabled=False)


def test_play_ends_with_the_line_that_says_no_key_was_sent_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", OR_KEY)
    with llm_in_thread(default=LITELLM_401) as llm:
        out, err = io.StringIO(), io.StringIO()
        argv = ["play", "--game", str(zork1()), "--pyproject", str(_project(tmp_path)), "--quiet"]
        argv += ["--turns", "1", "--model", "m", "--base-url", llm.base_url]
        code = main(argv, console=Console(file=out, width=400), err=Console(file=err, width=400))
        base = llm.base_url
    assert code == 1
    assert err.getvalue().splitlines()[-1] == (
        f"zorkmcp play: the model failed (LLMHTTPError): POST {base}/chat/completions answered HTTP 401 "
        f"Unauthorized: Authentication Error, No api key passed in. — no API key was sent to {base}: "
        "OPENROUTER_API_KEY is set but only sent to OpenRouter; export this endpoint's key as "
        'OPENAI_API_KEY, or set api_key_env = "OPENROUTER_API_KEY" in [tool.zorkgpt.llm]'
    )
    logs = (tmp_path / "logs" / "events.jsonl").read_text() + (tmp_path / "logs" / "ep.log").read_text()
    assert OR_KEY not in out.getvalue() + err.getvalue() + logs


# --- zorkmcp eval ------------------------------------------------------------------------------


def _eval(tmp_path: Path, base_url: str, *extra: str) -> list[str]:
    return [
        "eval", "--game", str(zork1()), "--out", str(tmp_path / "run"), "--no-mcp", "--model", "m",
        "--base-url", base_url, "--episodes", "2", "--turns", "1", "--quiet", *extra,
    ]  # fmt: skip


async def test_eval_stops_before_anything_starts_when_its_probe_is_refused_for_want_of_a_key(
    llm_server: LLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENROUTER_API_KEY", OR_KEY)
    llm_server.default = LITELLM_401
    base = llm_server.base_url
    code = await trio.to_thread.run_sync(partial(main, _eval(tmp_path, base)))
    out, err = capsys.readouterr()
    assert (code, "seed=" in out) == (2, False)  # the header, and no episode
    assert " ".join(err.split()) == (
        f"zorkmcp eval: ConfigError: the model endpoint {base} of arm(s) no-mcp answered GET {base}/models "
        "with HTTP 401 Unauthorized (Authentication Error, No api key passed in.); no API key was sent to "
        f"{base}: OPENROUTER_API_KEY is set but only sent to OpenRouter; export this endpoint's key as "
        'OPENAI_API_KEY, or set api_key_env = "OPENROUTER_API_KEY" in [tool.zorkgpt.llm] (or the arm\'s '
        "api_key_env)"
    )
    assert [(r.method, r.path, "authorization" in r.headers) for r in llm_server.requests] == [
        ("GET", "/v1/models", False)
    ]
    assert not (tmp_path / "run").exists()


async def test_eval_stops_when_its_probe_hears_the_key_itself_is_wrong(
    llm_server: LLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", OA_KEY)
    llm_server.default = OPENAI_401
    base = llm_server.base_url
    code = await trio.to_thread.run_sync(partial(main, _eval(tmp_path, base)))
    out, err = capsys.readouterr()
    assert (code, "seed=" in out) == (2, False)  # the header, and no episode
    assert " ".join(err.split()) == (
        f"zorkmcp eval: ConfigError: the model endpoint {base} of arm(s) no-mcp answered GET {base}/models "
        "with HTTP 401 Unauthorized (Incorrect API key provided: sk-proj-****************abcd. You can find "
        f"your API key at https://platform.openai.com/account/api-keys.); {base} refused the key in "
        "OPENAI_API_KEY: OPENAI_API_KEY goes to every endpoint but OpenRouter, so it must hold this "
        "endpoint's key; keep another provider's key in a variable of its own and name it with api_key_env "
        "in [tool.zorkgpt.llm] (or the arm's api_key_env)"
    )
    assert [(r.method, r.headers["authorization"]) for r in llm_server.requests] == [
        ("GET", f"Bearer {OA_KEY}")
    ]
    assert OA_KEY not in err
    assert not (tmp_path / "run").exists()


async def test_eval_starts_when_a_key_may_chat_but_not_list_models(
    llm_server: LLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # OpenAI's restricted keys: "List models: None" answers /models with 401, chat works.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", OA_KEY)
    scopes = {"error": {"message": "You have insufficient permissions for this operation. Missing scopes: "
                        "api.model.read.", "type": "invalid_request_error", "code": None}}  # fmt: skip

    def step(request: RecordedRequest) -> Reply:
        return json_reply(scopes, status=401) if request.method == "GET" else agent_reply("look")

    llm_server.default = step
    code = await trio.to_thread.run_sync(partial(main, _eval(tmp_path, llm_server.base_url)))
    err = capsys.readouterr().err
    assert code == 0, err
    assert [(r["turns"], r.get("error")) for r in episode_records(tmp_path / "run").values()] == [
        (1, None)
    ] * 2


async def test_eval_episodes_say_no_key_was_sent_when_models_needs_none(
    llm_server: LLMServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # llama.cpp started with --api-key lists its models to anyone and refuses chat without the key.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENROUTER_API_KEY", OR_KEY)
    invalid = json_reply(
        {"error": {"message": "Invalid API Key", "type": "authentication_error"}}, status=401
    )

    def step(request: RecordedRequest) -> Reply:
        return json_reply({"data": []}) if request.method == "GET" else invalid

    llm_server.default = step
    base = llm_server.base_url
    code = await trio.to_thread.run_sync(partial(main, _eval(tmp_path, base)))
    out, err = capsys.readouterr()
    assert code == 1, err
    errors = [record["error"] for record in episode_records(tmp_path / "run").values()]
    expected = (
        f"LLMHTTPError: POST {base}/chat/completions answered HTTP 401 Unauthorized: Invalid API Key — no "
        f"API key was sent to {base}: OPENROUTER_API_KEY is set but only sent to OpenRouter; export this "
        'endpoint\'s key as OPENAI_API_KEY, or set api_key_env = "OPENROUTER_API_KEY" in '
        "[tool.zorkgpt.llm] (or the arm's api_key_env)"
    )
    assert errors == [expected, expected]
    assert (
        f"zorkmcp eval: 2 episode(s) failed, e.g. no-mcp seed 12: {expected}; to play them again"
        in " ".join(err.split())
    )
    assert OR_KEY not in out + err
