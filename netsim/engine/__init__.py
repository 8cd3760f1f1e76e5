"""TODO"""

from netsim.engine.fast import ArrayList, EngineError, Hop, HopList, LinkStats, Playback, TransferLike, as_array, play, transfer_columns

__all__ = ["ArrayList", "EngineError", "Hop", "HopList", "LinkStats", "Playback", "TransferLike", "as_array", "play", "transfer_columns"]
