"""The TPU compiler's collective algorithms (``collective_algorithm_config``), read and played with netsim's algorithms.

The TPU compiler writes, in a collective's ``backend_config``, the emitter it generates
the collective with and often a strategy with its parameters, e.g.::

    {"emitter": "RotatedPincerEmitter", "strategy": "UniDirectionNDRingStrategy",
     "debug": "UniDirectionNDRingStrategy{colors:6 phases:3 cores:{4 4 4},... dim_used:{0 1 2},{1 2 0},{2 0 1},...}"}

What the names say, and how ``algorithm: compiler`` plays each (:func:`compiler_plan`):

==================================  =====================================================  ==========================
written                              read as                                                netsim plays it with
==================================  =====================================================  ==========================
``StrategyRing{colors:1 ...}``,      one ring over the group, one direction per colour      ``ring`` (1 colour) or
``UniDirection1DRingStrategy``                                                              ``bidirectional_ring`` (2)
``UniDirectionNDRingStrategy``,      rings along each physical axis in phases, each colour  ``multiaxis`` over the
``StrategyND{phases:k ...}``         taking the axes in a rotated order (``dim_used``)      slice's own axes
``1DAllGather*``,                    a one-axis ring (the module says no colours)           ``bidirectional_ring``
``SinglePhaseRingSumEmitter``
``AllToAllEmitter``                  not a ring                                             netsim's own (``direct``)
anything else                        not understood: said so                                netsim's own
==================================  =====================================================  ==========================

A ring takes its members in the compiler's ring order when the module says it reorders
them (``has_reordering_map``: :func:`netsim.network.device_order.physical_ring`, each
member next to the previous one on the slice), else in the order the module lists them.
These readings are netsim's: the compiler's emitters are not published, so a name is
taken at its word (colours as directions, phases as axes) and nothing more.

Rings along the axes move, at each step, what a chip holds as one buffer. netsim's
``multiaxis`` streams it block by block instead (each block free to go on as soon as
it arrives), which makes n (n - 1) transfers a group per piece: 522,240 for one
all-reduce over a 16x16 slice. A collective whose streamed plan would make more than
:data:`BUNDLED_ABOVE` transfers plays ``multiaxis_bundled``: the same stages, each
step's blocks (or partial sums) one message, about 17x fewer transfers on 256 chips.
On one axis the two take the same time to the bit; over several the bundled one waits
for each stage's whole super-block (docs/programs_limits.md).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from netsim.semantics.patterns import PATTERNS

__all__ = ["BUNDLED_ABOVE", "CompilerAlgorithm", "compiler_plan", "read_algorithm", "streaming_transfers"]

BUNDLED_ABOVE = 2**17
"""A collective along the slice's axes whose streamed ``multiaxis`` plan would make more transfers than this plays ``multiaxis_bundled``."""


def streaming_transfers(pattern: str, shape: tuple[int, ...], groups: int) -> int:
    """The transfers ``multiaxis`` makes for ``groups`` groups of this shape: n (n - 1) per piece and phase.

    Examples
    --------
    >>> streaming_transfers("all_reduce", (16, 16), 1)  # one all-reduce over a 16x16 slice
    522240
    """
    n = math.prod(shape)
    k = len([d for d in shape if d > 1]) or 1
    return groups * n * (n - 1) * 2 * k * len(PATTERNS[pattern].phases)


_STRATEGY = re.compile(r"([A-Za-z0-9]+Strategy[A-Za-z0-9]*|Strategy[A-Za-z0-9]+)\{([^\n]*)\}")
_FIELD = re.compile(r"(\w+):((?:\{[^{}]*\}(?:,\{[^{}]*\})*)|[^\s{},]+)")


@dataclass(frozen=True)
class CompilerAlgorithm:
    """A collective's ``collective_algorithm_config``, read.

    Attributes
    ----------
    emitter, strategy : str
        As written ("" when absent).
    fields : dict of str to str
        The strategy's ``name:value`` fields (``colors``, ``phases``, ``dim_used``, ...).
    reordered : bool
        ``has_reordering_map`` is set: the compiler orders the ring itself.
    """

    emitter: str
    strategy: str
    fields: dict[str, str]
    reordered: bool

    @property
    def name(self) -> str:
        """The short name shown in tables: the strategy with its colours and phases, else the emitter.

        Examples
        --------
        >>> read_algorithm('{"emitter":"E","strategy":"StrategyRing","debug":"StrategyRing{colors:1 phases:1 cores:{4}}"}').name
        'StrategyRing{colors:1 phases:1}'
        """
        if self.strategy:
            shown = " ".join(f"{k}:{self.fields[k]}" for k in ("colors", "phases") if k in self.fields)
            return f"{self.strategy}{{{shown}}}" if shown else self.strategy
        return self.emitter or "?"

    def number(self, field: str) -> int | None:
        """An integer field of the strategy (``colors``, ``phases``), or None."""
        value = self.fields.get(field, "")
        return int(value) if value.isdigit() else None


def read_algorithm(text: str | None) -> CompilerAlgorithm | None:
    """The ``collective_algorithm_config`` a collective carries (as :class:`~netsim.programs.hlo.ops.Collective` keeps it), read.

    Examples
    --------
    >>> a = read_algorithm(
    ...     '{"debug":"\\\\nUniDirectionNDRingStrategy{colors:6 phases:3 has_reordering_map:0 dim_used:{0 1 2},{1 2 0}}",'
    ...     '"emitter":"RotatedPincerEmitter","strategy":"UniDirectionNDRingStrategy"}'
    ... )
    >>> a.strategy, a.number("colors"), a.number("phases"), a.fields["dim_used"], a.reordered
    ('UniDirectionNDRingStrategy', 6, 3, '{0 1 2},{1 2 0}', False)
    >>> read_algorithm('{"emitter":"1DAllGatherNonMajorDim","debug":"group_size = 4 \\\\nhas_reordering_map: true"}').reordered
    True
    """
    if not text:
        return None
    try:
        config = json.loads(text)
    except ValueError:
        config = {"strategy": text}
    if not isinstance(config, dict):
        return None
    debug = str(config.get("debug", ""))
    strategy = str(config.get("strategy", ""))
    fields: dict[str, str] = {}
    found = _STRATEGY.search(debug) or _STRATEGY.search(strategy)
    if found:
        strategy = strategy or found.group(1)
        fields = {m.group(1): m.group(2) for m in _FIELD.finditer(found.group(2))}
    strategy = strategy.partition("{")[0]
    reordered = fields.get("has_reordering_map") == "1" or bool(re.search(r"has_reordering_map:\s*true", debug))
    return CompilerAlgorithm(str(config.get("emitter", "")), strategy, fields, reordered)


def compiler_plan(algorithm: CompilerAlgorithm, pattern: str) -> tuple[str | None, str, str]:
    """How ``algorithm: compiler`` plays a collective of ``pattern`` (``gather``, ``reduce_scatter``, ``psum``, ``all_to_all``).

    Returns ``(netsim algorithm or None for netsim's own, where: "ring" or "axes" or "", a note)``.

    Examples
    --------
    >>> compiler_plan(read_algorithm('{"strategy":"StrategyRing","debug":"StrategyRing{colors:1 phases:1}"}'), "psum")
    ('ring', 'ring', 'StrategyRing{colors:1 phases:1}: one ring, one direction')
    >>> compiler_plan(read_algorithm('{"emitter":"MysteryEmitter"}'), "gather")[2]
    'MysteryEmitter: not understood; netsim plays its own algorithm'
    """
    name = algorithm.name
    if pattern == "all_to_all" or "AllToAll" in algorithm.emitter:
        return None, "", f"{name}: not a ring; netsim plays its own all-to-all"
    strategy = algorithm.strategy
    if "colors" in algorithm.fields and not (algorithm.number("colors") or 0) > 0:
        return None, "", f"{name}: colors:{algorithm.fields['colors'][:20]} is not a count of rings; netsim plays its own algorithm"
    if strategy in ("StrategyRing", "UniDirection1DRingStrategy", "BiDirection1DRingStrategy"):
        colors = algorithm.number("colors") or 1
        if colors == 1:
            return "ring", "ring", f"{name}: one ring, one direction"
        return "bidirectional_ring", "ring", f"{name}: one ring, {colors} colours taken as both directions"
    if strategy in ("UniDirectionNDRingStrategy", "StrategyND"):
        return "multiaxis", "axes", f"{name}: rings along each axis in phases, colours through the axes in rotated orders"
    if algorithm.emitter.startswith("1DAllGather") or algorithm.emitter == "SinglePhaseRingSumEmitter":
        return "bidirectional_ring", "ring", f"{name}: a one-axis ring; the module gives no colours, both directions assumed"
    return None, "", f"{name}: not understood; netsim plays its own algorithm"
