"""Real Zork for the agent: the Jericho adapter, the game state of seed 003, and choosing the game.

The game MCP server lives in :mod:`zorkmcp.game.server` (``python -m zorkmcp.game.server``); it is
not imported here, because importing the MCP SDK takes about a second.
"""

from __future__ import annotations

from ._actions import BLOCKED_COMMANDS as BLOCKED_COMMANDS
from ._actions import MAX_ACTION_LENGTH as MAX_ACTION_LENGTH
from ._actions import MOVEMENT_COMMANDS as MOVEMENT_COMMANDS
from ._actions import ActionError as ActionError
from ._actions import movement_direction as movement_direction
from ._actions import validate_action as validate_action
from ._jericho import StepResult as StepResult
from ._jericho import ZorkGame as ZorkGame
from ._jericho import check_game_file as check_game_file
from ._jericho import strip_status_line as strip_status_line
from ._jericho import walkthrough as walkthrough
from ._paths import PACKAGED_GAME as PACKAGED_GAME
from ._paths import PACKAGED_GAMES_DIR as PACKAGED_GAMES_DIR
from ._paths import ZORK1_MD5 as ZORK1_MD5
from ._paths import default_games_dirs as default_games_dirs
from ._paths import resolve_game_path as resolve_game_path
from ._paths import story_md5 as story_md5
from ._state import HISTORY_LIMIT as HISTORY_LIMIT
from ._state import GameState as GameState

__all__ = [
    "BLOCKED_COMMANDS",
    "HISTORY_LIMIT",
    "MAX_ACTION_LENGTH",
    "MOVEMENT_COMMANDS",
    "PACKAGED_GAME",
    "PACKAGED_GAMES_DIR",
    "ZORK1_MD5",
    "ActionError",
    "GameState",
    "StepResult",
    "ZorkGame",
    "check_game_file",
    "default_games_dirs",
    "movement_direction",
    "resolve_game_path",
    "strip_status_line",
    "validate_action",
    "walkthrough",
]
