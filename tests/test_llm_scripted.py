"""The offline scripted model, choosing a chat model from settings, and the package surface."""

from __future__ import annotations

import importlib
import json
import pkgutil
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing
from backends import AUTOJUMP_THRESHOLD
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_server import (
    LLMServer,
    content_reply,
    llm_server_fixture,  # noqa: F401 -- the llm_server fixture, until tests/conftest.py registers the plugin
)

import zorkmcp.llm
from zorkmcp.config import LLMSettings, RetrySettings, SamplingSettings, Settings
from zorkmcp.llm import (
    DEFAULT_WALKTHROUGH,
    ChatModel,
    CompletionRequest,
    LLMClient,
    LLMResponse,
    ModelChoice,
    ScriptedModel,
    describe_model,
    open_chat_model,
    resolve_api_key,
    sampling_arguments,
)
from zorkmcp.observability import EventRecorder

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

KEY = "sk-or-v1-SCRIPTED-TEST-KEY-42"
THINK = {
    "type": "function",
    "function": {"name": "thinking__think", "description": "think", "parameters": {"type": "object"}},
}
LOOK = {"type": "function", "function": {"name": "game__look", "parameters": {"type": "object"}}}
FINAL_SCHEMA = {"type": "json_schema", "json_schema": {"name": "AgentResponse", "schema": {"type": "object"}}}


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "MY_LLM_KEY"):
        monkeypatch.delenv(name, raising=False)


def turn_start(state: str = "West of House") -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are ZorkGPT."}, {"role": "user", "content": state}]


def action_of(response: LLMResponse) -> str:
    assert response.content is not None
    answer = json.loads(response.content)
    assert set(answer) == {"thinking", "action", "new_objective"}
    assert answer["new_objective"] is None
    return str(answer["action"])


async def play_turn(model: ChatModel, tools: Sequence[Mapping[str, Any]] | None) -> tuple[str, int]:
    """One turn the way the engine runs it: tool calls answered until content comes back."""
    messages = turn_start()
    response = await model.complete(
        CompletionRequest(messages, tools=tools, tool_choice="auto" if tools else None)
    )
    calls = 0
    while response.tool_calls:
        calls += len(response.tool_calls)
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": c.type,
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in response.tool_calls
                ],
            }
        )
        for call in response.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": '{"content": "ok"}'})
        response = await model.complete(CompletionRequest(messages, tools=tools, tool_choice="auto"))
    return action_of(response), calls


# --- ScriptedModel --------------------------------------------------------------------


async def test_first_turn_calls_the_think_tool_then_answers_the_first_command() -> None:
    model = ScriptedModel(["open mailbox", "read leaflet"])
    assert model.scripted is True
    first = await model.complete(CompletionRequest(turn_start(), tools=[LOOK, THINK], tool_choice="auto"))
    assert first.content is None
    assert first.finish_reason == "tool_calls"
    assert first.tool_calls is not None
    (call,) = first.tool_calls
    assert call.type == "function"
    assert call.function.name == "thinking__think"
    assert json.loads(call.function.arguments) == {
        "thought": "Turn 1: next step is 'open mailbox'",
        "thoughtNumber": 1,
        "totalThoughts": 1,
        "nextThoughtNeeded": False,
    }
    assert model.position == 0  # a tool call does not consume a command
    after_tool = [
        *turn_start(),
        {"role": "assistant", "tool_calls": [{"id": call.id, "type": "function", "function": {}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "{}"},
    ]
    answer = await model.complete(CompletionRequest(after_tool, tools=[LOOK, THINK]))
    assert (answer.tool_calls, answer.finish_reason) == (None, "stop")
    assert action_of(answer) == "open mailbox"
    assert model.position == 1
    assert answer.usage is not None
    assert (
        answer.usage["total_tokens"] == answer.usage["prompt_tokens"] + answer.usage["completion_tokens"] > 0
    )


async def test_tool_every_n_turns_only_when_offered_and_commands_advance() -> None:
    commands = [f"cmd {i}" for i in range(12)]
    model = ScriptedModel(commands, tool_every=3)
    offered = [[THINK], [THINK], [THINK], None, [THINK], [LOOK], [LOOK, THINK], [THINK], [THINK], [THINK]]
    played = [await play_turn(model, tools) for tools in offered]
    assert [action for action, _ in played] == commands[:10]
    # turns 0, 3, 6, 9 are tool turns; turn 3 offered no tools, so no call there
    assert [calls for _, calls in played] == [1, 0, 0, 0, 0, 0, 1, 0, 0, 1]
    assert model.turns == 10


async def test_tool_ids_are_unique() -> None:
    model = ScriptedModel(["a"] * 6, tool_every=1)
    ids = []
    for _ in range(6):
        response = await model.complete(CompletionRequest(turn_start(), tools=[THINK]))
        assert response.tool_calls is not None
        ids.append(response.tool_calls[0].id)
    assert len(set(ids)) == 6


@pytest.mark.parametrize(
    ("wire_name", "calls"), [("think", True), ("srv__think", True), ("rethink", False), ("think__x", False)]
)
async def test_tool_name_matching(wire_name: str, calls: bool) -> None:
    model = ScriptedModel(["north"])
    tool = {"type": "function", "function": {"name": wire_name, "parameters": {"type": "object"}}}
    response = await model.complete(CompletionRequest(turn_start(), tools=[tool]))
    assert (response.tool_calls is not None) is calls


async def test_custom_tool_name_and_tool_choice_none() -> None:
    model = ScriptedModel(["north"], tool_name="look")
    assert (
        await model.complete(CompletionRequest(turn_start(), tools=[LOOK], tool_choice="none"))
    ).tool_calls is None
    assert model.position == 1
    response = await model.complete(CompletionRequest(turn_start(), tools=[LOOK, THINK]))
    assert response.content is not None  # turn 1 is not a tool turn
    model = ScriptedModel(["north"], tool_name="look")
    response = await model.complete(CompletionRequest(turn_start(), tools=[LOOK, THINK]))
    assert response.tool_calls is not None
    assert response.tool_calls[0].function.name == "game__look"


async def test_forced_final_call_answers_content_and_is_not_a_new_turn() -> None:
    model = ScriptedModel(["take lamp"], tool_every=1)
    messages = [*turn_start(), {"role": "user", "content": "Please provide your final action now."}]
    response = await model.complete(CompletionRequest(messages, response_format=FINAL_SCHEMA))
    assert action_of(response) == "take lamp"
    assert model.turns == 0


async def test_after_the_last_command_it_looks() -> None:
    model = ScriptedModel(["north"], tool_every=0)
    assert action_of(await model.complete(CompletionRequest(turn_start(), tools=[THINK]))) == "north"
    tail = await model.complete(CompletionRequest(turn_start(), tools=[THINK]))
    assert action_of(tail) == "look"
    assert "walkthrough is over" in json.loads(tail.content or "{}")["thinking"]
    assert model.position == 1


def test_negative_tool_every_is_refused() -> None:
    with pytest.raises(ValueError, match=r"tool_every must be >= 0 \(0 never calls a tool\), got -1"):
        ScriptedModel(["x"], tool_every=-1)


@settings(max_examples=100, deadline=None)
@given(
    commands=st.lists(st.text(min_size=1, max_size=12), max_size=8),
    offered=st.lists(st.booleans(), max_size=12),
    every=st.integers(0, 4),
)
def test_scripted_model_plays_the_commands_in_order(
    commands: list[str], offered: list[bool], every: int
) -> None:
    """Whatever the tools: the actions are the commands in order, then ``look``; tool calls happen
    exactly on offered turns whose index is a multiple of ``tool_every``."""
    model = ScriptedModel(commands, tool_every=every)

    async def main() -> list[tuple[str, int]]:
        return [await play_turn(model, [THINK] if o else None) for o in offered]

    played = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=AUTOJUMP_THRESHOLD))
    expected_actions = [*commands, *["look"] * len(offered)][: len(offered)]
    assert [action for action, _ in played] == expected_actions
    assert [calls for _, calls in played] == [
        int(o and every > 0 and turn % every == 0) for turn, o in enumerate(offered)
    ]


# --- choosing the model ---------------------------------------------------------------


def _settings(**llm: Any) -> Settings:
    return Settings(llm=LLMSettings(**llm), retry=RetrySettings(jitter_factor=0))


async def test_no_key_and_no_local_server_means_the_scripted_model() -> None:
    recorder = EventRecorder()
    async with open_chat_model(_settings(), events=recorder) as model:
        assert isinstance(model, ScriptedModel)
        assert model.scripted
        assert model.commands == DEFAULT_WALKTHROUGH
    (line,) = recorder.lines
    assert line.startswith("[INFO] No API key for https://openrouter.ai/api/v1")
    assert "using the OFFLINE SCRIPTED MODEL instead of openai/gpt-4o-mini" in line
    assert "(set OPENROUTER_API_KEY, name another variable" in line
    assert "OPENAI_API_KEY" not in line  # it is not set, and would not be sent to OpenRouter
    assert "api_key_env in [tool.zorkgpt.llm]" in line
    assert "agent_base_url / client_base_url" in line
    assert [e["event_type"] for e in recorder.recent] == ["llm_offline_model"]


def test_the_model_choice_is_made_once_and_the_scripted_model_keeps_its_place() -> None:
    """The plain get_action() path opens the model in every trio.run: the same scripted model each time."""
    choice = ModelChoice.from_settings(_settings(), walkthrough=["north", "south"])

    async def one_answer() -> str | None:
        async with choice.open() as model:
            request = CompletionRequest([{"role": "user", "content": "West of House."}])
            return (await model.complete(request)).content

    answers = [trio.run(one_answer), trio.run(one_answer)]
    assert [json.loads(a or "{}")["action"] for a in answers] == ["north", "south"]


async def test_walkthrough_and_events_for_the_scripted_model() -> None:
    class Sink:
        def __init__(self) -> None:
            self.seen: list[Any] = []

        def emit(self, event_type: str, /, **fields: Any) -> None:
            self.seen.append((event_type, fields))

        def log(self, level: str, message: str, /) -> None:
            self.seen.append((level, message))

    sink = Sink()
    async with open_chat_model(
        _settings(api_key_env="MY_LLM_KEY"), walkthrough=["xyzzy"], events=sink
    ) as model:
        assert isinstance(model, ScriptedModel)
        assert model.commands == ("xyzzy",)
    assert sink.seen[0] == (
        "llm_offline_model",
        {"base_url": "https://openrouter.ai/api/v1", "model": "openai/gpt-4o-mini"},
    )
    level, line = sink.seen[1]
    assert level == "INFO"  # the banner of zorkmcp play says it; no terminal warning
    assert "set MY_LLM_KEY, name another variable" in line


@pytest.mark.parametrize(
    ("variable", "base_url"),
    [("OPENROUTER_API_KEY", "https://openrouter.ai/api/v1"), ("OPENAI_API_KEY", "https://api.openai.com/v1")],
)
async def test_a_key_in_the_environment_selects_the_http_client(
    monkeypatch: pytest.MonkeyPatch, variable: str, base_url: str
) -> None:
    monkeypatch.setenv(variable, KEY)
    async with open_chat_model(_settings(client_base_url=base_url)) as model:
        assert isinstance(model, LLMClient)
        assert not model.scripted
        assert (model.model, model.base_url, model.has_api_key) == ("openai/gpt-4o-mini", base_url, True)
        assert model.retry == RetrySettings(jitter_factor=0)
        assert KEY not in repr(model)
        assert KEY not in describe_model(model)


async def test_api_key_env_names_the_only_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    async with open_chat_model(_settings(api_key_env="MY_LLM_KEY")) as model:
        assert isinstance(model, ScriptedModel)
    monkeypatch.setenv("MY_LLM_KEY", "sk-mine")
    async with open_chat_model(_settings(api_key_env="MY_LLM_KEY")) as model:
        assert isinstance(model, LLMClient)


def test_resolve_api_key_reads_the_hosts_own_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
    monkeypatch.setenv("OPENAI_API_KEY", "oa-key")
    llm = LLMSettings()
    assert resolve_api_key(llm, "https://openrouter.ai/api/v1") == ("or-key", "OPENROUTER_API_KEY")
    assert resolve_api_key(llm, "https://api.openai.com/v1") == ("oa-key", "OPENAI_API_KEY")
    assert resolve_api_key(llm, "https://example.com/v1") == ("oa-key", "OPENAI_API_KEY")
    assert resolve_api_key(llm, "https://example.com/v1", environ={"OPENAI_API_KEY": "  "}) == (None, None)
    assert resolve_api_key(llm, "https://example.com/v1", environ={"OPENROUTER_API_KEY": "k"}) == (None, None)


@pytest.mark.parametrize(
    ("settings_", "base_override", "model_override", "expected"),
    [
        (
            _settings(client_base_url="http://localhost:11434/v1"),
            None,
            None,
            ("http://localhost:11434/v1", "openai/gpt-4o-mini"),
        ),
        (
            _settings(
                client_base_url="https://a.example/v1",
                agent_base_url="http://127.0.0.1:8080/v1",
                agent_model="llama3",
            ),
            None,
            None,
            ("http://127.0.0.1:8080/v1", "llama3"),
        ),
        (
            _settings(agent_base_url="https://a.example/v1", agent_model="x"),
            "http://[::1]:8000/v1",
            "qwen",
            ("http://[::1]:8000/v1", "qwen"),
        ),
    ],
)
async def test_local_base_urls_need_no_key_and_overrides_win(
    settings_: Settings, base_override: str | None, model_override: str | None, expected: tuple[str, str]
) -> None:
    async with open_chat_model(
        settings_, base_url_override=base_override, model_override=model_override
    ) as model:
        assert isinstance(model, LLMClient)
        assert (model.base_url, model.model) == expected
        assert not model.has_api_key
        assert describe_model(model) == f"{expected[1]} at {expected[0]} (no API key)"


async def test_chosen_client_talks_to_a_local_server(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm_server.script(content_reply("hello"), content_reply("again"))
    async with open_chat_model(
        _settings(agent_model="local-model"), base_url_override=llm_server.base_url
    ) as model:
        assert (await model.complete(CompletionRequest(turn_start()))).content == "hello"
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # a configured key goes to a local server too
    async with open_chat_model(
        _settings(agent_model="local-model"), base_url_override=llm_server.base_url
    ) as model:
        assert (await model.complete(CompletionRequest(turn_start()))).content == "again"
    first, second = llm_server.requests
    assert first.json["model"] == "local-model"
    assert "authorization" not in first.headers
    assert second.headers["authorization"] == f"Bearer {KEY}"


def test_describe_the_scripted_model() -> None:
    text = describe_model(ScriptedModel(["a", "b"], tool_every=4))
    assert text == (
        "scripted-walkthrough — offline scripted model, no LLM is called "
        "(2 commands; calls 'think' every 4 turns)"
    )
    assert "never calls tools" in describe_model(ScriptedModel([], tool_every=0))


def test_sampling_arguments_feed_complete() -> None:
    assert sampling_arguments(SamplingSettings(temperature=0.3, top_k=40)) == {
        "temperature": 0.3,
        "top_p": None,
        "top_k": 40,
        "min_p": None,
        "max_tokens": None,
    }


# --- the package surface --------------------------------------------------------------


def test_public_names_are_exported_and_modules_declare_all() -> None:
    assert sorted(zorkmcp.llm.__all__) == sorted(
        name for name in vars(zorkmcp.llm) if not name.startswith("_") and name != "annotations"
    )
    for name in zorkmcp.llm.__all__:
        assert getattr(zorkmcp.llm, name) is not None
    for info in pkgutil.iter_modules(zorkmcp.llm.__path__):
        module = importlib.import_module(f"zorkmcp.llm.{info.name}")
        assert info.name.startswith("_")
        assert isinstance(module.__all__, list)
        assert all(hasattr(module, name) for name in module.__all__)
