"""Draw docs/live-view.svg: the live view of ``zorkmcp play`` at 100×30, turn 36 of a 120-turn episode.

The turns are real: the offline scripted model plays 36 turns of Zork I with the think tool in process.
Run from the repository: ``python docs/make_live_view.py [path/to/zork1.z3]``.
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from zorkmcp._live import LiveView
from zorkmcp.config import Settings
from zorkmcp.orchestrator import Orchestrator

HERE = Path(__file__).resolve().parent
GAME = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parents[1] / "shared" / "games" / "zork1.z3"
PROJECT = """\
[tool.zorkgpt.mcp]
enabled = true
config_file = "{config}"
[tool.zorkgpt.files]
json_log_file = "{logs}/events.jsonl"
episode_log_file = "{logs}/episode.log"
"""


def main() -> None:
    """Play 36 turns, then save the view of the last one."""
    with tempfile.TemporaryDirectory() as logs:
        pyproject = Path(logs) / "pyproject.toml"
        config = HERE.parent / "examples" / "mcp_config.inprocess.json"
        pyproject.write_text(PROJECT.format(config=config, logs=logs), encoding="utf-8")
        orchestrator = Orchestrator(Settings.from_pyproject(pyproject), game_path=GAME, seed=12, max_turns=36)
        orchestrator.run()
    episode = orchestrator.episode
    view = LiveView(turn_limit=120, model_use=episode.model_use if episode is not None else None)
    for record in orchestrator.records:
        view.add(record)
    console = Console(record=True, width=100, height=30, force_terminal=True, file=io.StringIO())
    console.print(view)
    print(console.export_text(clear=False))
    console.save_svg(str(HERE / "live-view.svg"), title="zorkmcp play")


if __name__ == "__main__":
    main()
