"""The ``drained`` and ``delivery`` invariants: every transfer sent and arrived, in order, over exactly its route."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from netsim.checks.arrays import _Arrays, _compiled_first, _first, _later, _slack
from netsim.checks.errors import InvariantError
from netsim.engine import Playback, TransferLike


def _check_drained(transfers: Sequence[TransferLike], playback: Playback, a: _Arrays) -> None:
    lost = np.flatnonzero(~(np.isfinite(a.sent) & np.isfinite(a.arrived)))
    if lost.size:
        devices = sorted(set(a.dst[lost[:100]].tolist()))
        raise InvariantError("drained", f"transfers {lost[:10].tolist()} never arrived: devices {devices[:10]} did not finish")
    early = _later(a.sent, a.arrived)
    early |= a.sent < 0
    if early.any():
        i = _first(early)
        raise InvariantError("drained", f"transfer #{i} arrived at {a.arrived[i]:.9g} s, before it was sent at {a.sent[i]:.9g} s")
    if len(a.dep_idx) and (int(a.dep_idx.min()) < 0 or int(a.dep_idx.max()) >= len(a.done)):
        raise InvariantError("drained", "a transfer waits for a step that does not exist")
    jumped = None if _compiled_first(len(a.src)) and _compiled_dependencies(a) else _later(a.done[a.dep_idx], a.sent[a.waiting])
    if jumped is not None and jumped.any():
        i, d = a.waiting[_first(jumped)], a.dep_idx[_first(jumped)]
        what = f"transfer #{d} it waits for arrived" if d < len(a.src) else f"compute step #{d - len(a.src)} it waits for ended"
        raise InvariantError("drained", f"transfer #{i} left at {a.sent[i]:.9g} s, before {what} at {a.done[d]:.9g} s")
    finish = max(float(a.arrived.max(initial=0.0)), float(a.ended.max(initial=0.0)))
    if not (math.isfinite(playback.time) and playback.time >= 0 and abs(playback.time - finish) <= 1e-9 * finish + 1e-15):
        last = "arrival" if not len(a.ended) else "arrival or compute step"
        raise InvariantError("drained", f"the run's time {playback.time:.9g} s is not the last {last} {finish:.9g} s")


def _check_delivery(transfers: Sequence[TransferLike], groups: Sequence[Sequence[int]] | None, a: _Arrays) -> None:
    topology = a.topology
    if groups is not None:
        outside = _outside_groups(groups, a.src, a.dst, topology.n_devices)
        if outside.any():
            i = _first(outside)
            raise InvariantError("delivery", f"transfer #{i} moves a chunk from device {a.src[i]} to device {a.dst[i]}, outside its group")
    if a.single_link and _compiled_first(len(transfers)) and not (a.distinct_links < 0).any() and _compiled_single_links(a):
        return  # (every crossing's transfer exists, too)
    if len(a.hop_transfer) and (int(a.hop_transfer.min()) < 0 or int(a.hop_transfer.max()) >= len(transfers)):
        raise InvariantError("delivery", "a link crossing belongs to a transfer that does not exist")
    crossings = np.bincount(a.hop_transfer, minlength=len(transfers))
    if a.single_link:
        bad = crossings != 1
        if not bad.any():  # one crossing per transfer: compare each with its transfer's one link
            wrong_link = np.flatnonzero(a.hop_link != a.route_link[a.hop_transfer])
            if len(wrong_link):
                bad[a.hop_transfer[wrong_link].min()] = True
    else:
        bad = crossings != a.route_length
        if not bad.any():
            wrong_link = a.hop_link[a.by("transfer")] != a.route_link
            if wrong_link.any():
                bad[a.hop_transfer[a.by("transfer")][_first(wrong_link)]] = True
    del crossings
    if bad.any():
        i = _first(bad)
        links = [topology.link_name(a.hop_link_id(k)) for k in np.flatnonzero(a.hop_transfer == i).tolist()]
        route = [topology.link_name(link) for link in _route_of(a, i)]
        raise InvariantError(
            "delivery", f"transfer #{i} ({a.src[i]}->{a.dst[i]}) crossed {len(links)} link(s) {links[:6]} but its route is {len(route)} link(s) {route[:6]}"
        )
    del bad
    if (a.distinct_links < 0).any():
        raise InvariantError("delivery", "a route crosses a link that is not in the topology")
    if a.single_link:
        _check_single_links(a)
        return
    order = a.by("transfer")
    route_length = a.route_length
    ends = np.cumsum(route_length)
    starts = ends - route_length
    moving = np.flatnonzero(route_length)
    u, v = a.link_u[a.route_link], a.link_v[a.route_link]
    joined = np.ones(len(u), bool)
    joined[1:] = v[:-1] == u[1:]
    joined[starts[moving]] = u[starts[moving]] == a.src[moving]
    if not joined.all():
        k = _first(~joined)
        i = int(a.hop_transfer[order][k])
        raise InvariantError("delivery", f"transfer #{i}'s route from {a.src[i]} to {a.dst[i]} jumps to link {u[k]}->{v[k]}")
    landed = a.src.copy()
    landed[moving] = v[ends[moving] - 1]
    astray = landed != a.dst
    if astray.any():
        i = _first(astray)
        raise InvariantError("delivery", f"transfer #{i} for device {a.dst[i]} was delivered to device {landed[i]}")
    start, end, who = a.hop_start[order], a.hop_end[order], a.hop_transfer[order]
    previous = np.empty_like(start)
    previous[1:] = start[:-1]
    previous[starts[moving]] = a.sent[moving]
    disorder = (previous > start + _slack(previous, start)) | (start > end + _slack(start, end))
    if disorder.any():
        k = _first(disorder)
        raise InvariantError(
            "delivery",
            f"transfer #{who[k]} crossed {topology.link_name(a.links[a.route_link[k]])} from {start[k]:.9g} s to {end[k]:.9g} s, out of order",
        )


def _check_single_links(a: _Arrays) -> None:
    """The rest of :func:`_check_delivery` when every route is one link and every transfer crossed it once.

    The same checks, read per transfer (a route starts at its source, ends at its
    destination) and per crossing (it starts after its transfer was sent, ends after
    it starts), with the same first fault reported.
    """
    topology, route_link = a.topology, a.route_link
    u = a.link_u[route_link]
    wrong = np.flatnonzero(u != a.src)
    if len(wrong):
        i = int(wrong[0])
        raise InvariantError("delivery", f"transfer #{i}'s route from {a.src[i]} to {a.dst[i]} jumps to link {u[i]}->{a.link_v[route_link[i]]}")
    del u
    v = a.link_v[route_link]
    astray = np.flatnonzero(v != a.dst)
    if len(astray):
        i = int(astray[0])
        raise InvariantError("delivery", f"transfer #{i} for device {a.dst[i]} was delivered to device {v[i]}")
    del v
    disorder = _later(a.sent[a.hop_transfer], a.hop_start)
    disorder |= _later(a.hop_start, a.hop_end)
    if disorder.any():
        k = int(np.flatnonzero(disorder)[np.argmin(a.hop_transfer[disorder])])  # the first transfer's crossing
        i = int(a.hop_transfer[k])
        raise InvariantError(
            "delivery",
            f"transfer #{i} crossed {topology.link_name(a.links[route_link[i]])} from {a.hop_start[k]:.9g} s to {a.hop_end[k]:.9g} s, out of order",
        )


def _compiled_dependencies(a: _Arrays) -> bool:
    """Whether the compiled pass (:func:`netsim.checks.passes_compiled.dependencies_pass`) finds every
    transfer leaving after the arrivals it waits for; it also tells ``a.deps_before``. False without numba."""
    if len(a.dep_ptr) != len(a.src) + 1:
        return False
    try:
        from netsim.checks.passes_compiled import dependencies_pass
    except ImportError:  # pragma: no cover - numba is a dependency; a broken install checks with NumPy
        return False
    ok, before = dependencies_pass(a.dep_ptr, a.dep_idx, a.done, a.sent)
    if ok:
        a.deps_before = bool(before)
    return bool(ok)


def _compiled_single_links(a: _Arrays) -> bool:
    """Whether the compiled pass (:func:`netsim.checks.passes_compiled.single_links_pass`) finds the rest
    of :func:`_check_delivery` holding, every route being one link (False without numba)."""
    try:
        from netsim.checks.passes_compiled import single_links_pass
    except ImportError:  # pragma: no cover - numba is a dependency; a broken install checks with NumPy
        return False
    return bool(
        single_links_pass(a.hop_transfer, a.hop_link, a.hop_start, a.hop_end, a.route_inverse, a.distinct_links, a.link_u, a.link_v, a.src, a.dst, a.sent)
    )


def _outside_groups(groups: Sequence[Sequence[int]], src: np.ndarray, dst: np.ndarray, n_devices: int) -> np.ndarray:
    """Transfers whose two ends share no group (groups may overlap, as ppermute's pairs do)."""
    count = np.zeros(n_devices, np.int64)
    for members in groups:
        count[list(members)] += 1
    if len(groups) == 1 and (count == 1).all() and _in_range(src, n_devices) and _in_range(dst, n_devices):
        return np.zeros(len(src), bool)  # one group of every device: nothing leaves it
    if (count <= 1).all():  # a partition: compare group numbers
        group_of = np.full(n_devices, -1, np.int64)
        for g, members in enumerate(groups):
            group_of[list(members)] = g
        of_src = group_of[src]
        outside = of_src != group_of[dst]
        outside |= of_src < 0
        return outside
    shared = {(u, v) for members in groups for u in members for v in members}
    return np.fromiter(((u, v) not in shared for u, v in zip(src.tolist(), dst.tolist(), strict=True)), bool, len(src))


def _in_range(devices: np.ndarray, n_devices: int) -> bool:
    """Whether every number indexes a table of ``n_devices`` (negative ones from the end, as NumPy does)."""
    return not len(devices) or (-n_devices <= int(devices.min()) and int(devices.max()) < n_devices)


def _route_of(a: _Arrays, i: int) -> list[Any]:
    k = int(a.route_inverse[i])
    start = int(a.distinct_length[:k].sum())
    return [a.links[link] if link >= 0 else "?" for link in a.distinct_links[start : start + int(a.distinct_length[k])].tolist()]
