"""The synchronous boundary between a game loop and the async turn engine.

- :func:`get_action` blocks and runs one whole turn inside exactly one ``trio.run``.
- :class:`Bridge` keeps one trio loop alive in a background thread for a whole episode, so
  ``per_episode`` servers and HTTP keep-alive survive between turns.
"""

from ._bridge import Bridge as Bridge
from ._bridge import EpisodeSetup as EpisodeSetup
from ._bridge import get_action as get_action
from ._bridge import reset as reset

__all__ = ["Bridge", "EpisodeSetup", "get_action", "reset"]
