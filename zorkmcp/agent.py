"""A ZorkGPT-style agent on top of the turn engine (seeds 000 §3, 002 Requirements 1, 5, 15).

The agent builds the messages (system prompt, game state plus memories), runs one turn through
:func:`zorkmcp.engine.run_turn` with the turn's MCP tools, and turns the final content into
``{"action", "reasoning", "new_objective"}``: the last JSON object with an ``action`` outside the
model's ``<think>`` thinking (:func:`parse_agent_response`). The action is always a non-empty,
single-line game command (property 2): an answer that is missing or does not parse becomes ``look``
with the parse error, which quotes what the model sent, as reasoning and an ``agent_parse_error``
event; a turn cut by its deadline becomes ``look`` too, with no parse error (the engine's
``turn_deadline_exceeded`` reports it).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import attrs

from .config import SamplingSettings
from .engine import TurnOptions, TurnResult, run_turn
from .llm._compat import finish_reason_said
from .llm._text import EXCERPT, REPLACEMENT, quoted_excerpt, relaxed_json_object, valid_text
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


_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
# Where a JSON object may start: "{" then a key or "}" ("{reasons}" or a run of "{{{{" is prose,
# not worth a decode that raises each time).
_OBJECT_START = re.compile(r'\{[ \t\n\r]*["}]')
_DECODER = json.JSONDecoder()
_JSON_TYPES = {
    dict: "an object cut by its thinking",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
}


@attrs.frozen
class _Scan:
    """The JSON objects at the top level of a text, and where its thinking is."""

    objects: tuple[tuple[int, int, dict[str, Any]], ...]
    """``(start, end, object)`` for each ``{`` that decodes, not counting objects inside another."""
    failures: tuple[tuple[int, json.JSONDecodeError], ...]
    """``(start, why)`` for each other ``{`` (those inside decoded objects are not tried)."""
    thinking: tuple[tuple[int, int], ...]
    """The ``(start, end)`` of each stretch of thinking."""

    def outside_thinking(self, start: int) -> bool:
        return not any(low <= start < high for low, high in self.thinking)


def _scan(content: str) -> _Scan:
    objects: list[tuple[int, int, dict[str, Any]]] = []
    failures: list[tuple[int, json.JSONDecodeError]] = []
    start = _OBJECT_START.search(content)
    while start is not None:
        index = start.start()
        try:
            value, end = _DECODER.raw_decode(content, index)
        except json.JSONDecodeError as exc:
            failures.append((index, exc))
            start = _OBJECT_START.search(content, index + 1)
        except RecursionError:  # thousands of unclosed "{": no object starts here
            start = _OBJECT_START.search(content, index + 1)
        else:
            objects.append((index, end, value))
            start = _OBJECT_START.search(content, end)
    return _Scan(tuple(objects), tuple(failures), _thinking(content, objects))


def _why_not_json(content: str, failures: list[json.JSONDecodeError]) -> str:
    """What the decoder said of the attempt that got furthest (the one the model meant as its
    answer), or of the first "{" when no attempt was worth making ("{'action': 'north'}")."""
    if failures:
        exc = max(failures, key=lambda exc: exc.pos)
    else:
        try:
            _DECODER.raw_decode(content, content.index("{"))
        except json.JSONDecodeError as first:
            exc = first
        else:  # only when thinking splits it: "{"a": <think>…</think> 1}"
            return "an object split by its thinking"
    reads = content[exc.pos : exc.pos + 30]
    if not reads.strip():
        return f"{exc.msg} at the end"
    return f"{exc.msg} {reads!r}" if exc.msg.endswith(" at") else f"{exc.msg} at {reads!r}"


def _thinking(content: str, objects: list[tuple[int, int, dict[str, Any]]]) -> tuple[tuple[int, int], ...]:
    """The ``<think>…</think>`` blocks of ``content``; a ``</think>`` with no ``<think>`` before it
    closes thinking that began with the text (the chat template opened it: DeepSeek-R1, Qwen3 on
    Ollama); a ``<think>`` never closed runs to the end (the model was cut off while thinking).
    A tag inside a JSON object (the answer's ``thinking`` string may name one) is text, not a tag."""
    spans: list[tuple[int, int]] = []
    opened: int | None = None
    for tag in _THINK_TAG.finditer(content):
        if any(start <= tag.start() < end for start, end, _ in objects):
            continue
        if not tag.group(1):
            opened = tag.start() if opened is None else opened
        elif opened is not None:
            spans.append((opened, tag.end()))
            opened = None
        else:
            spans.append((0, tag.end()))
    if opened is not None:
        spans.append((opened, len(content)))
    return tuple(spans)


def _answer_problem(data: dict[str, Any]) -> str | None:
    """Why ``data`` is not an answer, as "<the object> has …" ends (``None`` when it is one)."""
    if "action" not in data:
        return 'no "action"'
    action = data["action"]
    if isinstance(action, str) and action.strip():
        return None
    return f'"action": {json.dumps(action, ensure_ascii=False)[:EXCERPT]}, not a non-empty string'


def _outside_thinking(content: str, scan: _Scan) -> str:
    """``content`` without its thinking."""
    answer, last = "", 0
    for start, end in sorted(scan.thinking):
        answer += content[last:start]
        last = max(last, end)
    return answer + content[last:]


def _no_answer(content: str, scan: _Scan) -> str:
    """Why no answer was found in ``content``, in terms of what the model sent."""
    answer = _outside_thinking(content, scan)
    where = "the answer outside its thinking" if scan.thinking else "the answer"
    if not answer.strip():
        if scan.thinking:
            sent = quoted_excerpt(content)
            return f"the model sent only thinking (a <think> block), no answer after it: {sent}"
        return f"the answer is only white space: {content!r}" if content else "the answer is empty"
    objects = [data for start, _, data in scan.objects if scan.outside_thinking(start)]
    if objects:
        problem = _answer_problem(objects[-1])
        if len(objects) == 1:
            return f"the JSON object in {where} has {problem}: {quoted_excerpt(answer)}"
        many = f"none of the {len(objects)} JSON objects in {where} has a usable action"
        return f"{many} (the last has {problem}): {quoted_excerpt(answer)}"
    try:
        whole = json.loads(answer)
    except (ValueError, RecursionError):
        pass
    else:
        kind = "null" if whole is None else _JSON_TYPES.get(type(whole), type(whole).__name__)
        return f"expected a JSON object as the answer, got {kind}: {quoted_excerpt(answer)}"
    if "{" in answer:
        failures = [exc for start, exc in scan.failures if scan.outside_thinking(start)]
        why = _why_not_json(answer if not failures else content, failures)
        return f"no JSON object in {where} ({why}): {quoted_excerpt(answer)}"
    return f"no JSON object in {where}: {quoted_excerpt(answer)}"


def parse_agent_response(content: str) -> AgentResponse:
    """Parse the model's final content into an :class:`AgentResponse`.

    The answer is the last JSON object in ``content`` with a non-empty ``action`` string, outside
    the model's thinking (see below): the bare object, one inside a fenced code block, or one among
    prose, which may hold braces or quote an example answer before the real one. With no such JSON
    object, an answer written as Python or JavaScript would (``{'action': 'north'}``, a trailing
    comma) is read as the literal it writes, nothing evaluated. Objects nested in
    another are not answers. Thinking is a ``<think>…</think>`` block, everything before a
    ``</think>`` that no ``<think>`` opened (the chat template opened it), and an unclosed
    ``<think>`` to the end of the text (the model was cut off while thinking): drafts there are not
    the answer. ``reasoning`` is accepted for ``thinking`` (older prompts use it). The strings are
    returned as the JSON holds them (the agent makes them valid Unicode before it hands them on).

    Raises:
        ValueError: no JSON object with a usable ``action`` string; the message says what the
            model sent instead (an excerpt of its first 200 characters after the thinking).
    """
    scan = _scan(content)
    for start, _, data in reversed(scan.objects):
        if scan.outside_thinking(start) and _answer_problem(data) is None:
            return _response(data)
    relaxed = _relaxed_answer(_outside_thinking(content, scan))
    if relaxed is not None:
        return _response(relaxed)
    raise ValueError(_no_answer(content, scan))


def _relaxed_answer(answer: str) -> dict[str, Any] | None:
    """The answer written as Python or JavaScript would (``{'action': 'north'}``, a trailing comma):
    the text from its first ``{`` to its last ``}``, read as literals only
    (:func:`~zorkmcp.llm._text.relaxed_json_object`); ``None`` when that is no usable answer."""
    first, last = answer.find("{"), answer.rfind("}")
    text = relaxed_json_object(answer[first : last + 1]) if 0 <= first < last else None
    data = json.loads(text) if text is not None else None
    return data if isinstance(data, dict) and _answer_problem(data) is None else None


def _response(data: dict[str, Any]) -> AgentResponse:
    thinking = data.get("thinking", data.get("reasoning", ""))
    objective = data.get("new_objective")
    return AgentResponse(
        thinking=thinking if isinstance(thinking, str) else json.dumps(thinking),
        action=data["action"],
        new_objective=objective if isinstance(objective, str) and objective.strip() else None,
    )


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


def _missing_answer(result: TurnResult) -> str:
    """What the model sent instead of an answer, when its content was empty: a refusal, or reasoning
    only (the endpoint's reasoning parser may have kept the whole answer as reasoning); else ``""``."""
    if result.content:
        return ""
    if result.refusal:
        return f"; it refused: {quoted_excerpt(result.refusal)}"
    if result.reasoning:
        reasoning = result.reasoning.strip()
        tail = reasoning[-EXCERPT:]
        ends = f"{'…' * (tail != reasoning)}{tail!r}"
        return (
            f"; it sent {len(reasoning):,} characters of reasoning apart from the content "
            "(reasoning_content or reasoning), which is never taken as the answer: the endpoint's reasoning "
            "parser may have kept the whole answer there (vLLM does when the model does not close its "
            f"thinking with </think>; try another --reasoning-parser, or none). The reasoning ends: {ends}"
        )
    return ""


def _chat_model(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not callable(getattr(value, "complete", None)):
        raise TypeError(
            f"ZorkAgent: model must be a chat model (anything with model, scripted and async "
            f"complete(request), such as what zorkmcp.open_llm_client yields), got {type(value).__name__}"
        )


def _mcp_settings(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    from .config import McpSettings, Settings

    if isinstance(value, McpSettings):
        return
    hint = " (pass its .mcp, the [tool.zorkgpt.mcp] settings)" if isinstance(value, Settings) else ""
    raise TypeError(f"ZorkAgent: settings must be a zorkmcp.McpSettings{hint}, got {type(value).__name__}")


def _manager(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    from .mcp import McpManager

    if value is not None and not isinstance(value, McpManager):
        raise TypeError(
            f"ZorkAgent: mcp must be a zorkmcp.McpManager or None, got {type(value).__name__} (build one "
            "with McpManager(McpConfig(...), McpSettings(...)))"
        )


def _sampling(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, SamplingSettings):
        raise TypeError(
            f"ZorkAgent: sampling must be a zorkmcp.config.SamplingSettings, got {type(value).__name__}"
        )


def _prompt(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"ZorkAgent: system_prompt must be a non-blank str, got {value!r:.60}")


def _check_turn_arguments(
    game_state_text: object, relevant_memories: object, episode: object, turn: object
) -> None:
    """The arguments of :meth:`ZorkAgent.generate_action`, before anything is sent."""
    from .mcp import EpisodeServers

    if not isinstance(game_state_text, str):
        raise TypeError(f"game_state_text must be a str, got {type(game_state_text).__name__}")
    if relevant_memories is not None and not isinstance(relevant_memories, str):
        hint = " (join a list of notes into one str)" if isinstance(relevant_memories, (list, tuple)) else ""
        raise TypeError(
            f"relevant_memories must be a str or None{hint}, got {type(relevant_memories).__name__}"
        )
    if episode is not None and not isinstance(episode, EpisodeServers):
        raise TypeError(
            "episode must be the EpisodeServers that `async with manager.open_episode() as episode:` "
            f"yields, or None, got {type(episode).__name__}"
        )
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int) or turn < 0):
        raise TypeError(f"turn must be an int >= 0 or None, got {turn!r:.40}")


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

    Raises:
        TypeError: an argument of the wrong kind (``settings`` a whole ``Settings`` instead of its
            ``.mcp``, ``model`` a model's name instead of a chat model).
    """

    model: ChatModel = attrs.field(validator=_chat_model)
    settings: McpSettings = attrs.field(validator=_mcp_settings)
    mcp: McpManager | None = attrs.field(default=None, validator=_manager)
    sampling: SamplingSettings = attrs.field(factory=SamplingSettings, validator=_sampling)
    events: EventSink = attrs.Factory(NullSink)
    tracer: Tracer | None = None
    system_prompt: str = attrs.field(default=SYSTEM_PROMPT, validator=_prompt)
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
            TypeError: ``game_state_text`` is not a str, ``relevant_memories`` not a str or ``None``
                (a list of notes is joined by the caller), ``turn`` not an int >= 0.
            MCPServerStartupError: a server failed on the first turn (Requirement 6.1).
            ModelCompatibilityError: tools are offered to a model that cannot call them.
            LLMError: the model endpoint failed beyond its retries.
        """
        _check_turn_arguments(game_state_text, relevant_memories, episode, turn)
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
            # No answer came in time: not a parse error (the engine's turn_deadline_exceeded says so).
            deadline = self.settings.turn_timeout_seconds
            action = attrs.evolve(
                action,
                reasoning=f"No answer: the turn deadline of {deadline:g}s passed before the model gave one",
                parse_error=None,
            )
        elif action.parse_error is not None:
            why = action.parse_error + _missing_answer(result)
            reason = result.finish_reason
            if reason is not None and reason != "stop":
                why = f"{why} ({finish_reason_said(reason, self.sampling.max_tokens)})"
            action = attrs.evolve(action, reasoning=f"Parse error: {why}", parse_error=why)
        self._report_parse_error(action, result, turn_number)
        self.events.log("INFO", f"Turn {turn_number}: Agent action: {action.action}")
        return action

    @staticmethod
    def _parse(content: str | None) -> AgentAction:
        """The final content as an action, parsed once (the engine calls this; property 2)."""
        if not content:
            # The engine made the forced final call and still got nothing: the answer is missing, which
            # the seeds count as a parse error (a turn deadline is not: see generate_action).
            sent = "no content" if content is None else "empty content"
            why = f"the model sent {sent}, even to the forced final call"
        else:
            try:
                response = parse_agent_response(content)
            except ValueError as exc:
                why = str(exc)
            else:
                return ZorkAgent._action(response)
        # Requirement 15.3: safe defaults with error logging (seeds 000 §3.2 fallback).
        return AgentAction(
            action=DEFAULT_ACTION, reasoning=f"Parse error: {why}", new_objective=None, parse_error=why
        )

    @staticmethod
    def _action(response: AgentResponse) -> AgentAction:
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
        what = "Failed to parse agent response" if raw else "No agent response"
        self.events.log("ERROR", f"Turn {turn}: {what}: {action.parse_error}")
