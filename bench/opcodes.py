"""Count the Python bytecodes the engine executes to play a ring all_gather: a figure the machine's speed cannot blur.

Wall and CPU times on a shared VM drift by a third within minutes; the number of
bytecodes the interpreter executes to play the same schedule does not. Run it on
two checkouts to compare their engines (it also reads checkouts from before the
package layout)::

    PYTHONHASHSEED=0 PYTHONPATH=$PWD python bench/opcodes.py 64
    PYTHONHASHSEED=0 PYTHONPATH=/path/to/other/checkout python bench/opcodes.py 64

It plays the bidirectional ring all_gather of N devices once to warm the caches,
then again under an opcode tracer, and prints the bytecodes per function and per
chunk move.
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np

import netsim

try:
    from netsim.algorithms import build_schedule
except ImportError:  # a checkout from before the package layout
    from netsim.schedules import build_schedule
from netsim.engine import play


def count(n: int) -> tuple[int, Counter]:
    """Bytecodes executed by one play of the N-device ring all_gather, in total and per function."""
    schedule = build_schedule("gather", [list(range(n))], "bidirectional_ring")
    x = np.zeros((n, 2), np.float32)
    buffers = [{(d, p): piece for p, piece in enumerate(np.array_split(x[d], 2))} for d in range(n)]
    topology = netsim.ring(n)
    play(topology, schedule.transfers, buffers)
    counts: Counter = Counter()

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[f"{frame.f_code.co_filename.rsplit('netsim/', 1)[-1]}:{frame.f_code.co_name}"] += 1
        return tracer

    sys.settrace(tracer)
    try:
        play(topology, schedule.transfers, buffers)
    finally:
        sys.settrace(None)
    return len(schedule.transfers), counts


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    moves, counts = count(n)
    total = sum(counts.values())
    print(f"ring all_gather, N = {n}, {moves:,} chunk moves: {total:,} bytecodes, {total / moves:.1f} per move")
    for name, value in counts.most_common(6):
        print(f"  {value:>12,}  {name}")


if __name__ == "__main__":
    main()
