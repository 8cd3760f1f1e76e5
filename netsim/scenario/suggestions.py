"""Did you mean ...? The nearest allowed spelling of a misspelt field or value, and other libraries' names for netsim's.

A user coming from JAX, NCCL or MPI writes ``all_reduce`` where ``jax.lax`` (and netsim)
says ``psum``; one who mistypes writes ``algorithim``. Both get a hint naming the
spelling netsim reads.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

__all__ = ["DTYPE_ALIASES", "OTHER_NAMES", "did_you_mean", "dtype_name", "nearest"]

DTYPE_ALIASES = {
    "bf16": "bfloat16",
    **{f"f{bits}": f"float{bits}" for bits in (16, 32, 64)},
    **{f"{prefix}{bits}": f"int{bits}" for prefix in ("s", "i") for bits in (8, 16, 32, 64)},
    **{f"u{bits}": f"uint{bits}" for bits in (8, 16, 32, 64)},
    "f8e4m3fn": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2",
    "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2fnuz": "float8_e5m2fnuz",
    "f8e4m3b11fnuz": "float8_e4m3b11fnuz",
    "f8e4m3": "float8_e4m3",
    "f8e3m4": "float8_e3m4",
}
"""XLA's short dtype names (as HLO text and JAX's shape strings write them: ``bf16``, ``f32``, ``s32``) and NumPy's."""


def dtype_name(value: object) -> object:
    """The NumPy (ml_dtypes) name of a dtype written the XLA way; anything else as it is.

    Examples
    --------
    >>> dtype_name("bf16"), dtype_name("s32"), dtype_name("float32")
    ('bfloat16', 'int32', 'float32')
    """
    return DTYPE_ALIASES.get(value, value) if isinstance(value, str) else value


OTHER_NAMES = {
    "all_reduce": "psum",
    "allreduce": "psum",
    "psum_all": "psum",
    "reduce_scatter": "psum_scatter",
    "reducescatter": "psum_scatter",
    "allgather": "all_gather",
    "alltoall": "all_to_all",
    "all2all": "all_to_all",
    "collective_permute": "ppermute",
    "permute": "ppermute",
    "send_recv": "ppermute",
    "dot": "matmul",
    "dot_general": "einsum",
}
"""What other libraries call an op, and its ``jax.lax`` (netsim) name: ``all_reduce`` is ``psum``."""

_WHY = {
    "psum": "JAX's all-reduce is jax.lax.psum",
    "psum_scatter": "JAX's reduce-scatter is jax.lax.psum_scatter",
    "ppermute": "JAX's collective permute is jax.lax.ppermute",
}


def nearest(value: object, choices: Iterable[str]) -> str | None:
    """The allowed spelling ``value`` most likely meant, or None when none is close.

    Examples
    --------
    >>> nearest("algorithim", ["name", "algorithm", "seed"]), nearest("all_reduce", ["psum", "all_gather"])
    ('algorithm', 'psum')
    >>> nearest("colour", ["shape", "dtype"]) is None
    True
    """
    if not isinstance(value, str):
        return None
    choices = list(choices)
    other = OTHER_NAMES.get(value.strip().lower().replace("-", "_"))
    if other in choices:
        return other
    folded = {choice.lower(): choice for choice in choices}
    word = value.strip().lower()
    if word in folded:
        return folded[word]
    allowed = 1 if len(word) <= 4 else 2 if len(word) <= 10 else 3
    distances = sorted((_edits(word, choice), choice) for choice in folded)
    if distances and distances[0][0] <= allowed and (len(distances) == 1 or distances[1][0] > distances[0][0]):
        return folded[distances[0][1]]
    close = difflib.get_close_matches(word, list(folded), n=1, cutoff=0.8)
    return folded[close[0]] if close else None


def _edits(a: str, b: str) -> int:
    """Edits (insert, delete, replace, swap two neighbours) that turn ``a`` into ``b``: ``nmae`` is 1 from ``name``."""
    previous, row = None, list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (x != y))
            if previous is not None and i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                current[j] = min(current[j], previous[j - 2] + 1)
        previous, row = row, current
    return row[-1]


def did_you_mean(value: object, choices: Iterable[str], *, other_sizes: bool = True) -> str:
    """``"; did you mean X?"`` (with why, for another library's name), or ``""`` when nothing is close.

    Examples
    --------
    >>> print(did_you_mean("all_reduce", ["psum", "all_gather"]))
    ; did you mean psum? (JAX's all-reduce is jax.lax.psum)
    >>> did_you_mean("ringg", ["ring", "direct"]), did_you_mean("zzz", ["ring"]), did_you_mean("ring9", ["ring8"], other_sizes=False)
    ('; did you mean ring?', '', '')
    """
    guess = nearest(value, choices)
    if guess is None or (not other_sizes and re.sub(r"\d+(?:x\d+)*", "N", str(value)) == re.sub(r"\d+(?:x\d+)*", "N", guess)):
        return ""  # ring9 is not a misspelt ring8, nor torus4x4x4 a misspelt torus4x4
    why = _WHY.get(guess) if isinstance(value, str) and OTHER_NAMES.get(value.strip().lower().replace("-", "_")) == guess else None
    return f"; did you mean {guess}?" + (f" ({why})" if why else "")
