"""Final answers as small models and reasoning endpoints send them, read by the agent.

- An answer written as Python or JavaScript would (``{'action': 'north'}``, a trailing comma, ``None``)
  is the answer it writes: before, the turn played ``look`` with a parse error.
- A refusal (OpenAI's ``message.refusal``, sent instead of content when the model declines a
  structured answer) is quoted in the parse error, streamed or not: before, the error said only that
  the model sent no content.
- Reasoning sent apart from the content (``reasoning_content``: vLLM's reasoning parsers, DeepSeek;
  ``reasoning``: Ollama, OpenRouter) is never taken as the answer, but when the content is empty the
  parse error says how much reasoning came and how it ends, and what to try.

The answers come from the loopback chat-completions server (``tests/llm_server.py``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import LLMServer, completion, content_reply, json_reply, sse_reply

from zorkmcp.agent import ZorkAgent, parse_agent_response
from zorkmcp.config import McpSettings
from zorkmcp.llm import CassetteHeader, RecordingModel, ReplayModel, open_llm_client
from zorkmcp.observability import EventRecorder

if TYPE_CHECKING:
    from pathlib import Path


async def act(llm_server: LLMServer) -> tuple[Any, EventRecorder]:
    events = EventRecorder()
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as client:
        agent = ZorkAgent(model=client, settings=McpSettings(), events=events)
        return await agent.generate_action("West of House", None), events


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{'thinking': 'mail first', 'action': 'open mailbox'}", ("open mailbox", "mail first", None)),
        ('{"thinking": "t", "action": "north",}', ("north", "t", None)),
        ("{'action': 'west', 'new_objective': None}", ("west", "", None)),
        (
            "{thinking: 'bare keys', action: 'east', new_objective: 'find the lamp'}",
            ("east", "bare keys", "find the lamp"),
        ),
        (
            "Here it is: {'action': 'take lamp', 'thinking': 'dark ahead'} Good luck!",
            ("take lamp", "dark ahead", None),
        ),
        ("<think>{'action': 'draft'}</think>{'action': 'up', 'thinking': 'final'}", ("up", "final", None)),
    ],
)
def test_an_answer_in_python_or_javascript_notation_is_read(content: str, expected: tuple[Any, ...]) -> None:
    response = parse_agent_response(content)
    assert (response.action, response.thinking, response.new_objective) == expected


@pytest.mark.parametrize(
    ("content", "start"),
    [
        ("{'action': north}", "no JSON object in the answer (Expecting property name"),  # nothing evaluated
        ("{'action': __import__('os').getcwd()}", "no JSON object in the answer (Expecting property name"),
        ("<think>{'action': 'draft'}</think>no answer", "no JSON object in the answer outside its thinking"),
        ("{'thinking': 'no action'}", "no JSON object in the answer (Expecting property name"),
        ("{'action': ''}", "no JSON object in the answer (Expecting property name"),
    ],
)
def test_loose_notation_that_is_no_answer_is_still_a_parse_error(content: str, start: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(start)}"):
        parse_agent_response(content)


async def test_a_python_notation_answer_is_played(llm_server: LLMServer) -> None:
    llm_server.script(
        content_reply("{'thinking': 'the house is west', 'action': 'go west', 'new_objective': None}")
    )
    action, events = await act(llm_server)
    assert (action.action, action.reasoning, action.parse_error) == ("go west", "the house is west", None)
    assert events.of_type("agent_parse_error") == []


REFUSAL = "I'm sorry, I can't help with that request."


def refusal_reply() -> Any:
    return json_reply(completion({"role": "assistant", "content": None, "refusal": REFUSAL}))


async def test_a_refusal_is_quoted_in_the_parse_error(llm_server: LLMServer) -> None:
    llm_server.script(refusal_reply(), refusal_reply())
    action, events = await act(llm_server)
    why = f'the model sent no content, even to the forced final call; it refused: "{REFUSAL}"'
    assert (action.action, action.parse_error) == ("look", why)
    assert [e["error"] for e in events.of_type("agent_parse_error")] == [why]
    warning = "[WARNING] Turn 1 Iteration 1: LLM returned no content and no tool_calls, finish_reason=stop"
    assert f'{warning}; it refused: "{REFUSAL}"' in events.lines


async def test_an_answer_of_only_reasoning_says_so_in_its_warning(llm_server: LLMServer) -> None:
    # Before: "LLM returned no content and no tool_calls, finish_reason=stop", not a word of the
    # reasoning the endpoint did send (vLLM's and DeepSeek's reasoning_content)
    thinking = "The house is west. I should go west. But first"
    only = json_reply(completion({"role": "assistant", "content": None, "reasoning_content": thinking}))
    llm_server.script(only, only)
    _, events = await act(llm_server)
    warning = "[WARNING] Turn 1 Iteration 1: LLM returned no content and no tool_calls, finish_reason=stop"
    assert f"{warning}; it sent only its reasoning (46 characters): '{thinking}'" in events.lines


async def test_a_streamed_refusal_is_quoted_in_the_parse_error(llm_server: LLMServer) -> None:
    def streamed() -> Any:
        return sse_reply(
            {
                "model": "gpt-4o-test",
                "choices": [{"index": 0, "delta": {"role": "assistant", "refusal": "I'm sorry, "}}],
            },
            {"choices": [{"index": 0, "delta": {"refusal": "I can't help with that request."}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        )

    llm_server.script(streamed(), streamed())
    action, _ = await act(llm_server)
    assert (
        action.parse_error
        == f'the model sent no content, even to the forced final call; it refused: "{REFUSAL}"'
    )


def reasoning_reply(key: str, reasoning: str, finish_reason: str = "stop") -> Any:
    message = {"role": "assistant", "content": None, key: reasoning}
    return json_reply(completion(message, finish_reason=finish_reason))


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
async def test_reasoning_without_content_says_where_the_answer_may_be(
    llm_server: LLMServer, key: str
) -> None:
    reasoning = "The mailbox is small. " * 20 + 'So: {"thinking": "mail", "action": "open mailbox"}'
    llm_server.script(reasoning_reply(key, reasoning), reasoning_reply(key, reasoning, "length"))
    action, events = await act(llm_server)
    why = (
        "the model sent no content, even to the forced final call; it sent 490 characters of reasoning apart "
        "from the content (reasoning_content or reasoning), which is never taken as the answer: the "
        "endpoint's reasoning parser may have kept the whole answer there (vLLM does when the model does not "
        "close its thinking with </think>; try another --reasoning-parser, or none). The reasoning ends: "
        """…'mailbox is small. The mailbox is small. The mailbox is small. The mailbox is small. The """
        """mailbox is small. The mailbox is small. The mailbox is small. So: {"thinking": "mail", """
        """"action": "open mailbox"}' (the model stopped with finish_reason 'length': its answer was """
        "cut at the endpoint's own token limit (no max_tokens was sent); set max_tokens in "
        "[tool.zorkgpt.agent_sampling] (in zorkmcp eval: the arm's max_tokens), or give the model server a "
        "larger context)"
    )
    assert (action.action, action.parse_error) == ("look", why)
    assert [e["error"] for e in events.of_type("agent_parse_error")] == [why]


async def test_short_streamed_reasoning_is_quoted_whole(llm_server: LLMServer) -> None:
    def streamed() -> Any:
        return sse_reply(
            {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "Go "}}]},
            {"choices": [{"index": 0, "delta": {"reasoning_content": "north."}, "finish_reason": "stop"}]},
        )

    llm_server.script(streamed(), streamed())
    action, _ = await act(llm_server)
    assert action.parse_error is not None
    assert action.parse_error.endswith("The reasoning ends: 'Go north.'")


async def test_reasoning_beside_an_answer_changes_nothing(llm_server: LLMServer) -> None:
    message = {
        "role": "assistant",
        "content": '{"thinking": "t", "action": "north"}',
        "reasoning_content": "Hmm.",
    }
    llm_server.script(json_reply(completion(message)))
    action, events = await act(llm_server)
    assert (action.action, action.parse_error) == ("north", None)
    assert events.of_type("agent_parse_error") == []


async def test_a_recorded_refusal_replays_with_the_same_parse_error(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """The cassette keeps the refusal and the reasoning: a replay says what the live episode said."""
    message = {"role": "assistant", "content": None, "refusal": REFUSAL, "reasoning_content": "Not this."}
    llm_server.script(json_reply(completion(message)), json_reply(completion(message)))
    path = tmp_path / "turn.cassette"
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as client:
        recorder = RecordingModel(client, path, CassetteHeader(model="gpt-4o-test"))
        live = await ZorkAgent(model=recorder, settings=McpSettings()).generate_action("West of House", None)
    replayed = await ZorkAgent(model=ReplayModel(path), settings=McpSettings()).generate_action(
        "West of House", None
    )
    why = f'the model sent no content, even to the forced final call; it refused: "{REFUSAL}"'
    assert (live.parse_error, replayed.parse_error) == (why, why)
