"""What each pattern of blocks a collective plays does, as data: the algorithms, plans and checks read it here.

A collective's layout names its *pattern* (``layout.pattern``): ``gather``,
``reduce_scatter``, ``all_reduce``, ``all_to_all`` or ``permute``. What the rest of
netsim needs to know about a pattern is a field of its entry in :data:`PATTERNS`,
not a comparison of its name:

* ``phases``: the patterns an algorithm plays for it, in order (an all-reduce is a
  reduce-scatter, then a gather: two phases, and twice the transfers); none for a
  permute, whose pairs are each sent straight along their route (``pairs``);
* ``reduces``: partial sums travel and are added where they arrive, so every member
  ends with the sum of its group's data (and floating-point results are compared
  within a tolerance, not exactly);
* ``by_member``: block ``b`` of a group of ``n`` belongs to member ``b // n`` (an
  all-to-all numbers a member's ``n`` blocks after it).

Examples
--------
>>> [(p.name, len(p.phases), p.reduces) for p in PATTERNS.values()]
[('gather', 1, False), ('reduce_scatter', 1, True), ('all_reduce', 2, True), ('all_to_all', 1, False), ('permute', 0, False)]
>>> PATTERNS["permute"].pairs, PATTERNS["all_to_all"].owner(5, 4)
(True, 1)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PATTERNS", "Pattern"]


@dataclass(frozen=True)
class Pattern:
    """One pattern of blocks (see the module docstring for its fields)."""

    name: str
    phases: tuple[str, ...]
    reduces: bool = False
    by_member: bool = False

    @property
    def pairs(self) -> bool:
        """Its transfers are pairs, each sent straight along its route (no algorithm plans it)."""
        return not self.phases

    def owner(self, block: int, size: int) -> int:
        """The group position whose data block ``block`` of a group of ``size`` carries (gathers and all-to-alls)."""
        return block // size if self.by_member else block


PATTERNS: dict[str, Pattern] = {
    p.name: p
    for p in (
        Pattern("gather", ("gather",)),
        Pattern("reduce_scatter", ("reduce_scatter",), reduces=True),
        Pattern("all_reduce", ("reduce_scatter", "gather"), reduces=True),
        Pattern("all_to_all", ("all_to_all",), by_member=True),
        Pattern("permute", ()),
    )
}
"""Every pattern a layout names, by name."""
