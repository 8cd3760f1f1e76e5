"""Checks on every run: the invariants a playback must satisfy, and the memory a run will need.

After the engine plays a schedule, :func:`check_playback` checks that the playback is
one a correct simulator could have produced: every transfer drained, crossed exactly
its route, the links and devices conserved bytes, and every device ends holding the
chunks it should. They hold for any correct schedule on any topology, so a broken one
is a bug in netsim and raises :class:`InvariantError` (the CLI reports an internal
error). Before a run, :mod:`netsim.checks.memory` estimates what it will hold and
refuses it up front when the machine has too little.

Modules
-------
=====================================  ==========================================================
:mod:`netsim.checks.invariants`        the list of invariants and :func:`check_playback`, which
                                       runs them all
:mod:`netsim.checks.errors`            :class:`InvariantError`, raised by every check
:mod:`netsim.checks.arrays`            the playback and transfers as NumPy arrays, built once
                                       for every check, and the time comparisons they share
:mod:`netsim.checks.delivery`          ``drained`` and ``delivery``: every transfer sent,
                                       arrived, and carried over exactly its route
:mod:`netsim.checks.conservation`      ``link bytes`` and ``device bytes``: bytes conserved on
                                       every link and at every device
:mod:`netsim.checks.chunks`            ``chunks``: the schedule replayed symbolically, one
                                       transfer at a time (reductions)
:mod:`netsim.checks.chunks_placed`     the same replay on whole arrays when nothing adds
                                       (gathers, all_to_all, ppermute)
:mod:`netsim.checks.chunks_bundled`    the ``chunks`` check for gathers that send bundles:
                                       sources hold what they send, bundles open to each chunk
:mod:`netsim.checks.memory`            memory a run needs against memory available
=====================================  ==========================================================

The ``output`` invariant (each device's simulated output equals the NumPy reference)
is checked where the output is assembled, in :mod:`netsim.collectives`.

Where a change goes
-------------------
A new invariant: a ``_check_...(..., a: _Arrays)`` function in the module of its
subject (or a new module beside them) that reads the columns of
:class:`~netsim.checks.arrays._Arrays` and raises ``InvariantError("<name>", detail)``
on the first fault; call it from :func:`check_playback`, list it in the docstring of
:mod:`netsim.checks.invariants`, and add a test that corrupts a playback on purpose
(tests/test_invariants.py). Modules import their siblings directly
(``from netsim.checks.arrays import ...``), never this package, so no import cycles.

Examples
--------
>>> from netsim.checks import InvariantError
>>> error = InvariantError("chunks", "device 2 ends without chunk (0, 0)")
>>> error.invariant, str(error)
('chunks', "invariant 'chunks' violated: device 2 ends without chunk (0, 0); this is a bug in netsim, please report it")
"""

from netsim.checks.errors import InvariantError
from netsim.checks.invariants import check_playback
from netsim.checks.memory import (
    BYTES_PER_TRANSFER,
    MATERIALISE_LIMIT_BYTES,
    MemoryEstimate,
    MemoryLimitError,
    available_memory,
    check_memory,
    estimate_memory,
    pieces_of,
    transfers_of,
)

__all__ = [
    "BYTES_PER_TRANSFER",
    "MATERIALISE_LIMIT_BYTES",
    "InvariantError",
    "MemoryEstimate",
    "MemoryLimitError",
    "available_memory",
    "check_memory",
    "check_playback",
    "estimate_memory",
    "pieces_of",
    "transfers_of",
]
