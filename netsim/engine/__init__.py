"""TODO"""

from netsim.engine.fast import EngineError, Playback, play

__all__ = ["EngineError", "Playback", "play"]
