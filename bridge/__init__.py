"""The synchronous boundary between a game loop and the async turn engine.

- :func:`get_action` blocks and runs one whole turn inside exactly one ``trio.run``.
- :class:`Bridge` keeps one trio loop alive in a background thread for a whole episode, so
  ``per_episode`` servers and HTTP keep-alive survive between turns.

The implementation lives in ``zorkmcp._bridge`` (so that ``zorkmcp``'s episode loop can use it
without importing this top-level package: the import arrows point one way, ``bridge → zorkmcp``).
"""

from zorkmcp._bridge import Action as Action
from zorkmcp._bridge import Bridge as Bridge
from zorkmcp._bridge import EpisodeSetup as EpisodeSetup
from zorkmcp._bridge import get_action as get_action
from zorkmcp._bridge import reset as reset

__all__ = ["Action", "Bridge", "EpisodeSetup", "get_action", "reset"]
