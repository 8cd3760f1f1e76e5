"""The engine: plays any schedule of transfers and compute steps on any topology, moving real chunks.

It knows no collective. The model is in :mod:`netsim.engine.processes`: each
directed link, each device and each device's compute unit is a SimPy process,
and that is the definition of netsim's timing. :mod:`netsim.engine.fast` plays
exactly the same events from flat lists, for big runs; the tests check that both
give the same times, hops and statistics, bit for bit. :func:`play` runs either.

| module | holds |
|---|---|
| ``link_model`` | the link model written once: ``serve``, ``head_ready``, ``LinkModel`` (rates by link number); every player reads it |
| ``processes`` | the model: ``Link``, ``ComputeUnit``, ``Device`` processes |
| ``fast`` | the fast player of the same events |
| ``compiled``, ``kernel`` | the fast player's loop compiled (numba) for big schedules, compute steps and joins included |
| ``jit`` | numba as the compiled loops import it: without the SciPy numba would import for nothing they use |
| ``play_order`` | transfers numbered in the order they will play, for the compiled loop (the same events, read nearly in order) |
| ``kernel_parts`` | what the compiled loops share: the radix heap's buckets, server queues, counting off waiters, compute units |
| ``compiled_bundles``, ``kernel_bundles`` | the same loop, compiled for schedules that send bundles: chunks by slot, bundles made in the loop |
| ``compiled_cache`` | numba's ``njit`` with a cache that is rebuilt when corrupt and bypassed when unwritable, never fatal |
| ``sums``, ``row_buffers``, ``final_buffers`` | the compiled player's reductions, added in waves; buffers as rows or numbers, chunks looked up when read |
| ``playing`` | :func:`play`: checks a schedule, runs an engine, returns a ``Playback`` |
| ``playback`` | what the engine takes (``TransferLike``, ``ComputeLike``) and gives (``Playback``) |
| ``columns`` | transfers, compute steps and hops as NumPy columns (``hop_arrays``) |
| ``critical_path`` | the critical path as data (``CriticalPath``, ``PathStep``), which a ``Result`` carries; :mod:`netsim.analysis.critical_path` finds it |
| ``routes`` | routes as link numbers; the checks a schedule passes first |
| ``payloads`` | what devices hold and send: chunks by reference, bundles made from parts |

Where a change goes: how long a message holds a link, or when it goes on, goes into
:mod:`netsim.engine.link_model`, which every player reads (touch ``kernel.py`` so
numba recompiles the loop). Another behaviour of links or compute units goes into
the process model first (or into your own ``link_class`` / ``compute_class``), then,
event for event, into the fast player, and tests/test_engines.py checks both.
"""

from netsim.engine.columns import ArrayList, ColumnList, HopList, RouteList, as_array, compute_columns, transfer_columns
from netsim.engine.playback import ComputeLike, ComputeRecord, ComputeStats, EngineError, Hop, LinkStats, Playback, TransferLike
from netsim.engine.playing import ENGINES, play
from netsim.engine.processes import ComputeUnit, Link

__all__ = [
    "ENGINES",
    "ArrayList",
    "ColumnList",
    "ComputeLike",
    "ComputeRecord",
    "ComputeStats",
    "ComputeUnit",
    "EngineError",
    "Hop",
    "HopList",
    "Link",
    "LinkStats",
    "Playback",
    "RouteList",
    "TransferLike",
    "as_array",
    "compute_columns",
    "play",
    "transfer_columns",
]
