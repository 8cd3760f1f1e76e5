"""The ``link bytes`` and ``device bytes`` invariants: bytes are conserved on every link and at every device."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from netsim.checks.arrays import _Arrays, _compiled_first, _first, _later, _slack
from netsim.checks.errors import InvariantError
from netsim.engine import Playback, TransferLike
from netsim.engine.row_buffers import RowBuffers
from netsim.engine.size_buffers import SizeBuffers


def _check_link_bytes(playback: Playback, a: _Arrays) -> None:
    if len(a.hop_link) and int(a.hop_link.min()) < 0:
        k = _first(a.hop_link < 0)
        raise InvariantError("link bytes", f"transfer #{a.hop_transfer[k]} crossed link {a.hop_link_id(k)}, which is not in the topology")
    m, h = len(a.links), len(a.hop_link)
    sums = _compiled_link_sums(a) if _compiled_first(h) else None
    if sums is None:
        carried = np.bincount(a.hop_link, weights=a.nbytes[a.hop_transfer], minlength=m)
        messages = np.bincount(a.hop_link, minlength=m)
        busy = np.bincount(a.hop_link, weights=a.hop_end - a.hop_start, minlength=m)
    else:
        carried, messages, busy, overlap = sums
    stats = list(playback.links.values())
    counted = np.fromiter((s.bytes for s in stats), float, m)
    counted_messages = np.fromiter((s.messages for s in stats), np.int64, m)
    counted_busy = np.fromiter((s.busy_s for s in stats), float, m)
    wrong = (counted != carried) | (counted_messages != messages) | (np.abs(counted_busy - busy) > _slack(counted_busy, busy))
    if wrong.any():
        k = _first(wrong)
        raise InvariantError(
            "link bytes",
            f"link {a.topology.link_name(a.links[k])} counted {int(counted[k])} B in {counted_messages[k]} message(s), busy {counted_busy[k]:.9g} s, "
            f"but its crossings carry {int(carried[k])} B in {messages[k]}, busy {busy[k]:.9g} s",
        )
    # Sorted by link (stably), each crossing against the one before it on the same link.
    if h < 2 or (sums is not None and not overlap):
        return
    order = a.by("link")
    start, end = a.hop_start[order], a.hop_end[order]
    overlap = _later(end[:-1], start[1:])
    firsts = np.cumsum(messages)[:-1]  # where each link's crossings begin in the sorted order
    overlap[firsts[(firsts > 0) & (firsts < h)] - 1] = False  # the first crossing of a link follows another link's
    if overlap.any():
        k = _first(overlap) + 1
        raise InvariantError(
            "link bytes",
            f"link {a.topology.link_name(a.links[a.hop_link[order[k]]])} carried transfer #{a.hop_transfer[order[k]]} from {start[k]:.9g} s "
            f"while still busy until {end[k - 1]:.9g} s",
        )


def _compiled_link_sums(a: _Arrays) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool] | None:
    """Per link the bytes, messages and busy time of its crossings, and whether two of them overlap, from the
    compiled pass (:func:`netsim.checks.passes_compiled.link_sums`); None where it does not follow the NumPy
    check (a link or transfer out of range) and without numba."""
    try:
        from netsim.checks.passes_compiled import link_sums
    except ImportError:  # pragma: no cover - numba is a dependency; a broken install checks with NumPy
        return None
    ok, carried, messages, busy, overlap = link_sums(a.hop_link, a.hop_transfer, a.nbytes, a.hop_start, a.hop_end, len(a.links))
    return (carried, messages, busy, bool(overlap)) if ok else None


def _check_device_bytes(transfers: Sequence[TransferLike], buffers: Sequence[dict[Hashable, Any]], playback: Playback, a: _Arrays) -> None:
    key_size = _key_sizes(buffers, a.keys)
    n = a.topology.n_devices
    sums = _compiled_device_sums(a, key_size, n) if _compiled_first(len(a.src)) and len(a.keys) else None
    sent, received = _device_sums(a, key_size, n) if sums is None else sums
    counted = np.fromiter((s.bytes for s in playback.links.values()), np.int64, len(a.links))
    link_out = np.bincount(a.link_u, weights=counted, minlength=n)
    link_in = np.bincount(a.link_v, weights=counted, minlength=n)
    if len(link_in) > n or len(link_out) > n:  # nodes that are not devices (a DCN's NICs and switch) only forward
        nodes = max(len(link_in), len(link_out))
        link_in, link_out = np.pad(link_in, (0, nodes - len(link_in))), np.pad(link_out, (0, nodes - len(link_out)))
        sent, received = np.pad(sent, (0, nodes - n)), np.pad(received, (0, nodes - n))
    forwarded_in, forwarded_out = link_in - received, link_out - sent
    wrong = (forwarded_in != forwarded_out) | (forwarded_in < 0)
    if wrong.any():
        d = _first(wrong)
        raise InvariantError(
            "device bytes",
            f"device {d} took in {int(link_in[d])} B and received {int(received[d])} B, but put out {int(link_out[d])} B and sent {int(sent[d])} B "
            f"(forwarded {int(forwarded_in[d])} B in, {int(forwarded_out[d])} B out)",
        )


def _key_sizes(buffers: Sequence[dict[Hashable, Any]], keys: Sequence[Hashable]) -> np.ndarray:
    """Each key's size in the first buffer holding it with one (-1: none does)."""
    if isinstance(buffers, SizeBuffers):
        try:
            return buffers.key_sizes(keys)
        except (TypeError, ValueError, OverflowError):  # (keys that are not pairs of ints: looked up one by one)
            pass
    size: dict[Hashable, int] = {}
    if isinstance(buffers, RowBuffers):  # (every device holds the same keys, each chunk a row of one array)
        buffers = buffers[:1]
    for held in buffers:
        for key in [key for key in held if key not in size]:  # (devices mostly hold keys met already)
            chunk = held[key]
            if hasattr(chunk, "nbytes"):  # payload-free (timing-only) chunks have no size to compare
                size[key] = int(chunk.nbytes)
    return np.fromiter((size.get(key, -1) for key in keys), np.int64, len(keys))


def _device_sums(a: _Arrays, key_size: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Raise if a transfer carries other than its chunk's size (``key_size`` per key, -1 if unknown);
    else per device the bytes the moving transfers sent and received."""
    expected = key_size[a.key_index] if len(a.keys) else np.full(len(a.key_index), -1, np.int64)
    wrong = expected != a.nbytes
    wrong &= expected >= 0
    if wrong.any():
        i = _first(wrong)
        raise InvariantError("device bytes", f"transfer #{i} carried {a.nbytes[i]} B of chunk {a.keys[a.key_index[i]]!r}, which is {expected[i]} B")
    if a.single_link:  # every transfer moves
        src, dst, nbytes = a.src, a.dst, a.nbytes
    else:
        moving = a.route_length > 0
        src, dst, nbytes = a.src[moving], a.dst[moving], a.nbytes[moving]
    weights = nbytes.astype(np.float64)  # (once for both)
    sent = np.bincount(src, weights=weights, minlength=n)
    received = np.bincount(dst, weights=weights, minlength=n)
    return sent, received


def _compiled_device_sums(a: _Arrays, key_size: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_device_sums` from the compiled pass (:func:`netsim.checks.passes_compiled.device_sums`);
    None at a wrong size, where it does not follow the NumPy check (a number out of range) and without numba."""
    try:
        from netsim.checks.passes_compiled import device_sums
    except ImportError:  # pragma: no cover - numba is a dependency; a broken install checks with NumPy
        return None
    moving = np.zeros(0, bool) if a.single_link else a.route_length > 0  # (empty: every transfer moves)
    ok, sent, received = device_sums(key_size, a.key_index, a.nbytes, a.src, a.dst, moving, n)
    return (sent, received) if ok else None
