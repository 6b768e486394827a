"""A ZorkGPT-style agent on top of the turn engine (seeds 000 §3, 002 Requirements 1, 5, 15).

The agent builds the messages (system prompt, game state plus memories), runs one turn through
:func:`zorkmcp.engine.run_turn` with the turn's MCP tools, and turns the final content into
``{"action", "reasoning", "new_objective"}``. The action is always a non-empty, single-line game
command (property 2): anything unparseable becomes ``look`` with the parse error as reasoning.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import attrs

from .config import SamplingSettings
from .engine import TurnOptions, TurnResult, run_turn
from .llm._text import REPLACEMENT, valid_text
from .observability import EventSink, NullSink, Tracer

if TYPE_CHECKING:
    from .config import McpSettings
    from .llm import ChatModel
    from .mcp import EpisodeServers, McpManager

__all__ = [
    "DEFAULT_ACTION",
    "SYSTEM_PROMPT",
    "AgentAction",
    "AgentResponse",
    "ZorkAgent",
    "build_messages",
    "clean_action",
    "parse_agent_response",
]

DEFAULT_ACTION = "look"
MAX_ACTION_LENGTH = 120

SYSTEM_PROMPT = """\
You are an expert player of Zork I, the classic text adventure. Each turn you receive the current game \
state (what the game just said, where you are, your score) and notes from earlier turns, and you choose \
the single next command to type into the game.

How to play well:
- Explore systematically, read descriptions closely, examine and take useful objects, and keep your \
light source in mind underground.
- Use short parser commands the game understands: "north", "take lamp", "open mailbox", \
"put coffin in case", "turn on lamp". One command per turn.
- If tools are available (for example a `think` tool for step-by-step reasoning, or tools that show \
the map, your inventory and recent history), use them when a puzzle is hard or you are unsure where \
to go. They help you reason; they do not act in the game. Do not call tools when the next move is obvious.

When you are done reasoning, answer with a JSON object and nothing else:
{"thinking": "<why this command>", "action": "<one game command>", "new_objective": "<a plan, or null>"}
"""


@attrs.frozen(kw_only=True)
class AgentResponse:
    """The agent's final answer (the seeds' ``AgentResponse``: thinking, action, new_objective)."""

    thinking: str
    action: str
    new_objective: str | None = None

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON schema of the answer, as an OpenAI ``response_format`` (strict mode)."""
        return {
            "type": "json_schema",
            "json_schema": {
                "name": "AgentResponse",
                "strict": True,
                "schema": {
                    "type": "object",
                    "properties": {
                        "thinking": {"type": "string", "description": "Why this command."},
                        "action": {"type": "string", "description": "One game command, e.g. 'open mailbox'."},
                        "new_objective": {
                            "type": ["string", "null"],
                            "description": "An optional multi-step plan, or null.",
                        },
                    },
                    "required": ["thinking", "action", "new_objective"],
                    "additionalProperties": False,
                },
            },
        }


@attrs.frozen(kw_only=True)
class AgentAction:
    """What :meth:`ZorkAgent.generate_action` returns: the orchestrator's dict plus the turn."""

    action: str
    reasoning: str
    new_objective: str | None
    turn: TurnResult | None = None
    parse_error: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        """The seeds' return value: ``{"action", "reasoning", "new_objective"}``."""
        return {"action": self.action, "reasoning": self.reasoning, "new_objective": self.new_objective}


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_PROMPT_PREFIX = re.compile(r"^\s*(?:>+|action:|command:)\s*", re.IGNORECASE)


def clean_action(action: str) -> str:
    """A single-line, non-empty game command (property 2).

    Keeps the first non-empty line, drops a leading ``>`` prompt or ``action:`` label and wrapping
    quotes or backticks, removes control characters (and U+FFFD, what a lone surrogate from the model
    became: a gap, not a letter), folds white space and caps the length; an empty result becomes
    ``look``.
    """
    lines = [line for line in action.replace("\r", "\n").split("\n") if line.strip()]
    text = lines[0] if lines else ""
    text = "".join(ch if ch.isprintable() and ch != REPLACEMENT else " " for ch in text)
    text = " ".join(text.split())[:MAX_ACTION_LENGTH]
    previous = None
    while text != previous:  # "'> north'" and "> > north" need more than one pass
        previous = text
        text = _PROMPT_PREFIX.sub("", text).strip().strip("`\"'").strip()
    return text or DEFAULT_ACTION


def _candidate_objects(content: str) -> list[str]:
    candidates = [content.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(content)]
    start, end = content.find("{"), content.rfind("}")
    if 0 <= start < end:
        candidates.append(content[start : end + 1])
    return candidates


def parse_agent_response(content: str) -> AgentResponse:
    """Parse the model's final content into an :class:`AgentResponse`.

    Accepts the bare JSON object, one inside a fenced code block, or one embedded in prose.
    ``reasoning`` is accepted for ``thinking`` (older prompts use it). The strings are returned as
    the JSON holds them (the agent makes them valid Unicode before it hands them on).

    Raises:
        ValueError: no JSON object with a usable ``action`` string.
    """
    last_error: Exception | None = None
    for candidate in _candidate_objects(content):
        try:
            data = json.loads(candidate)
        except ValueError as exc:
            last_error = exc
            continue
        if not isinstance(data, dict):
            last_error = ValueError(f"expected a JSON object, got {type(data).__name__}")
            continue
        action = data.get("action")
        if not isinstance(action, str) or not action.strip():
            last_error = ValueError("the JSON object has no non-empty 'action' string")
            continue
        thinking = data.get("thinking", data.get("reasoning", ""))
        objective = data.get("new_objective")
        return AgentResponse(
            thinking=thinking if isinstance(thinking, str) else json.dumps(thinking),
            action=action,
            new_objective=objective if isinstance(objective, str) and objective.strip() else None,
        )
    raise ValueError(str(last_error) if last_error else "empty response")


def build_messages(
    game_state_text: str,
    relevant_memories: str | None = None,
    *,
    model: str = "",
    system_prompt: str = SYSTEM_PROMPT,
) -> list[dict[str, Any]]:
    """The opening messages of a turn (seeds 000 §3.2).

    The system prompt goes in a ``system`` message, or a ``user`` message for o1-style models that
    refuse the system role; game state and memories form the user message. Prompt-caching markers
    (Requirement 4.7) are the chat client's to add, not the agent's.
    """
    role = "user" if re.search(r"(^|/)o1(-|$)", model) else "system"
    user_content = game_state_text
    if relevant_memories:
        user_content = f"{user_content}\n\n{relevant_memories}"
    return [{"role": role, "content": system_prompt}, {"role": "user", "content": user_content}]


@attrs.define
class ZorkAgent:
    """Chooses the next Zork command, using MCP tools when the model wants them.

    Args:
        model: the chat model.
        settings: ``[tool.zorkgpt.mcp]`` (iterations, timeouts, ``force_tool_support``).
        mcp: the MCP manager, or ``None`` when MCP is disabled (Requirement 9.4): the same code path
            then runs without tools (Requirement 1.5, property 48).
        sampling: sampling parameters.
        events: where events and episode-log lines go.
        tracer: span factory.
        episode_id: added to events by the caller's recorder.
        system_prompt: replace the built-in prompt.
    """

    model: ChatModel
    settings: McpSettings
    mcp: McpManager | None = None
    sampling: SamplingSettings = attrs.Factory(SamplingSettings)
    events: EventSink = attrs.Factory(NullSink)
    tracer: Tracer | None = None
    system_prompt: str = SYSTEM_PROMPT
    turns: int = 0

    async def generate_action(
        self,
        game_state_text: str,
        relevant_memories: str | None = None,
        *,
        episode: EpisodeServers | None = None,
        turn: int | None = None,
    ) -> AgentAction:
        """Run one turn and return the action.

        Args:
            game_state_text: the current game state.
            relevant_memories: notes from earlier turns, appended to the user message.
            episode: per_episode servers owned by a longer-lived caller (``bridge.Bridge``).
            turn: the turn number for logs (default: count calls).

        Raises:
            MCPServerStartupError: a server failed on the first turn (Requirement 6.1).
            ModelCompatibilityError: tools are offered to a model that cannot call them.
            LLMError: the model endpoint failed beyond its retries.
        """
        self.turns += 1
        turn_number = turn if turn is not None else self.turns
        messages = build_messages(
            game_state_text, relevant_memories, model=self.model.model, system_prompt=self.system_prompt
        )
        mcp = self.mcp
        if mcp is not None and mcp.is_disabled:
            self.events.emit("mcp_disabled_fallback", reason="every MCP server is disabled for this episode")
            self.events.log("INFO", f"Turn {turn_number}: Continuing without MCP tools")
            mcp = None

        options = TurnOptions(
            final_response_format=AgentResponse.json_schema(),
            max_tool_iterations=self.settings.max_tool_iterations,
            sampling=self.sampling,
            force_tool_support=self.settings.force_tool_support,
            deadline=self.settings.turn_timeout_seconds,
            turn=turn_number,
            parse_answer=self._parse,
        )
        result = await run_turn(
            self.model,
            messages,
            open_toolbox=(lambda: mcp.open_turn(episode)) if mcp is not None else None,
            options=options,
            events=self.events,
            tracer=self.tracer,
        )
        action: AgentAction = attrs.evolve(result.answer, turn=result)
        if result.deadline_exceeded:
            why = "turn deadline exceeded"
            action = attrs.evolve(action, reasoning=f"Parse error: {why}", parse_error=why)
        self._report_parse_error(action, result, turn_number)
        self.events.log("INFO", f"Turn {turn_number}: Agent action: {action.action}")
        return action

    @staticmethod
    def _parse(content: str | None) -> AgentAction:
        """The final content as an action, parsed once (the engine calls this; property 2)."""
        if content is None:
            why = "no final content from the model"
            return AgentAction(
                action=DEFAULT_ACTION, reasoning=f"Parse error: {why}", new_objective=None, parse_error=why
            )
        try:
            response = parse_agent_response(content)
        except ValueError as exc:
            # Requirement 15.3: safe defaults with error logging (seeds 000 §3.2 fallback).
            return AgentAction(
                action=DEFAULT_ACTION,
                reasoning=f"Parse error: {exc}. Raw: {content[:100]}",
                new_objective=None,
                parse_error=str(exc),
            )
        # The answer's JSON is the model's text too: a lone surrogate escape in it ("\\ud800", half an
        # emoji) becomes U+FFFD, as everywhere the model's text comes in (zorkmcp.llm._text), before
        # the answer goes to the game, the logs, the reports and the next prompt.
        objective = response.new_objective
        return AgentAction(
            action=clean_action(valid_text(response.action)),
            reasoning=valid_text(response.thinking),
            new_objective=None if objective is None else valid_text(objective),
        )

    def _report_parse_error(self, action: AgentAction, result: TurnResult, turn: int) -> None:
        if action.parse_error is None:
            return
        raw = result.content[:2000] if result.content is not None else None
        self.events.emit("agent_parse_error", raw_response=raw, error=action.parse_error)
        self.events.log("ERROR", f"Turn {turn}: Failed to parse agent response: {action.parse_error}")
