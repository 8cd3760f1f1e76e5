"""Human units in, SI floats out.

Scenario files speak the way people do ("64 MiB", "45 GB/s", "1 us"); the code
works in bytes, bytes per second and seconds. This module is the only bridge.

Decimal prefixes (k, M, G, T) are powers of 1000 and binary ones (Ki, Mi, Gi, Ti)
powers of 1024, as in the IEC standard: "1 GB" is 10**9 bytes and "1 GiB" is
2**30 bytes. Only ``B`` (bytes) is accepted as a size unit. Bandwidths are bytes per
second ("45 GB/s") or, as network links are often quoted, bits per second
("400 Gb/s" or "400 Gbps", read as 50 GB/s): a lower-case ``b`` is a bit.

Compute rates are written in FLOP/s with decimal prefixes up to E ("197 TFLOP/s",
"918 TFLOPS", "1.97e14 FLOP/s"); binary prefixes make no sense for them and are refused.
"""

from __future__ import annotations

import math
import re

__all__ = ["format_bytes", "format_seconds", "parse_bandwidth", "parse_bytes", "parse_duration", "parse_flops", "parse_percent", "parse_work"]

_PREFIX = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9, "ps": 1e-12}

_NUMBER = r"(?P<num>[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)"
_SIZE_RE = re.compile(_NUMBER + r"\s*(?P<prefix>Ki|Mi|Gi|Ti|k|K|M|G|T|)B")
_RATE_RE = re.compile(_NUMBER + r"\s*(?P<prefix>Ki|Mi|Gi|Ti|k|K|M|G|T|)(?P<unit>B/s|b/s|bps)")
_FLOPS_RE = re.compile(_NUMBER + r"\s*(?P<prefix>k|K|M|G|T|P|E|)(?:FLOP/s|FLOPs/s|FLOPS)")
_FLOPS_PREFIX = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_WORK_RE = re.compile(_NUMBER + r"\s*(?P<prefix>k|K|M|G|T|P|E|)(?:FLOP|FLOPs)")
_ONE_FLOP_RE = re.compile(_NUMBER + r"\s*(?P<prefix>k|K|M|G|T|P|E|)FLOP")  # work, never a rate ("FLOPs" may mean either)
_TIME_RE = re.compile(_NUMBER + r"\s*(?P<unit>s|ms|us|µs|μs|ns|ps)")
_PERCENT_RE = re.compile(_NUMBER + r"\s*%")


_MISSPELT = {
    "duration": {
        **dict.fromkeys(("sec", "secs", "second", "seconds", "S"), "s"),
        **dict.fromkeys(("msec", "msecs", "millisecond", "milliseconds", "mS"), "ms"),
        **dict.fromkeys(("usec", "usecs", "microsecond", "microseconds", "uS", "US"), "us"),
        **dict.fromkeys(("nsec", "nsecs", "nanosecond", "nanoseconds", "nS"), "ns"),
    },
    "bandwidth": {f"{p}{spelling}": f"{p}B/s" for p in ("", "k", "K", "M", "G", "T") for spelling in ("Bps", "B/sec", "Bytes/s", "bytes/s", "byte/s")},
}
"""Units people write that netsim does not read, and the spelling it does."""
_NUMBER_FIRST = re.compile(_NUMBER + r"\s*(?P<rest>.*)")


def _match(regex: re.Pattern[str], text: object, what: str, example: str) -> re.Match[str]:
    if not isinstance(text, str):
        raise ValueError(f"expected a {what} string such as {example!r}, got {text!r}")
    match = regex.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"cannot read {text!r} as a {what}; write it like {_example(text, what, example)!r}")
    return match


_BASE_UNIT = {"size": ("B", 0.0), "bandwidth": ("B/s", 1e6), "duration": ("s", -1e-3), "compute rate": ("FLOP/s", 1e6), "number of FLOP": ("FLOP", 1e3)}
"""The base unit of a bare number, and from where (below, when negative) it is taken to be in it rather than in the example's unit:
45e9 is B/s, 45 is GB/s; 1e-3 is s, 1 is us."""


def _example(text: str, what: str, example: str) -> str:
    """``example`` with the number ``text`` starts with and the unit it meant, when that is plain ("1 usec" -> "1 us", a bare "1e-3" -> "1e-3 s")."""
    given = _NUMBER_FIRST.fullmatch(text.strip())
    if given is None:
        return example
    unit = _MISSPELT.get(what, {}).get(given["rest"].strip())
    if unit is None:
        if given["rest"]:
            return example
        base, start = _BASE_UNIT.get(what, ("", math.inf))
        value = float(given["num"])
        in_base = value <= -start if start < 0 else value >= start
        return f"{given['num']} {base if in_base else example.split(' ', 1)[1]}"
    return f"{given['num']} {unit}"


def parse_bytes(text: str) -> int:
    """Read a size such as ``"64 MiB"`` or ``"1.5 kB"`` as a whole number of bytes.

    Parameters
    ----------
    text : str
        A number followed by ``B``, ``kB``, ``MB``, ``GB``, ``TB``, ``KiB``,
        ``MiB``, ``GiB`` or ``TiB``.

    Returns
    -------
    int
        The size in bytes.

    Raises
    ------
    ValueError
        If the text is not a size, or does not come to a whole number of bytes.

    Examples
    --------
    >>> parse_bytes("64 MiB")
    67108864
    >>> parse_bytes("1.5kB")
    1500
    """
    match = _match(_SIZE_RE, text, "size", "64 MiB")
    value = float(match["num"]) * _PREFIX[match["prefix"]]
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is more bytes than a number holds; write a finite size such as '64 MiB'")
    if value != int(value):
        raise ValueError(f"{text!r} is not a whole number of bytes")
    return int(value)


def parse_bandwidth(text: str) -> float:
    """Read a bandwidth such as ``"45 GB/s"`` in bytes per second.

    Bits per second (``b/s`` or ``bps``, a lower-case ``b``) are read too, as an
    eighth as many bytes.

    Examples
    --------
    >>> parse_bandwidth("45 GB/s")
    45000000000.0
    >>> parse_bandwidth("400 Gb/s"), parse_bandwidth("400 Gbps")
    (50000000000.0, 50000000000.0)
    """
    match = _match(_RATE_RE, text, "bandwidth", "45 GB/s")
    value = float(match["num"]) * _PREFIX[match["prefix"]]
    if match["unit"] != "B/s":
        value /= 8
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite bandwidth")
    return value


def parse_flops(text: str) -> float:
    """Read a compute rate such as ``"197 TFLOP/s"`` in floating-point operations per second.

    Parameters
    ----------
    text : str
        A number followed by ``FLOP/s`` (or ``FLOPs/s`` or ``FLOPS``), with an optional
        decimal prefix ``k``, ``M``, ``G``, ``T``, ``P`` or ``E``.

    Returns
    -------
    float
        The rate in FLOP/s.

    Raises
    ------
    ValueError
        If the text is not a compute rate or is not finite.

    Examples
    --------
    >>> parse_flops("197 TFLOP/s")
    197000000000000.0
    >>> parse_flops("918 TFLOPS"), parse_flops("1.97e14 FLOP/s")
    (918000000000000.0, 197000000000000.0)
    """
    work = _ONE_FLOP_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if work is not None:
        raise ValueError(f"{text!r} is an amount of work; a compute rate is per second: write it like '{work['num']} {work['prefix']}FLOP/s'")
    match = _match(_FLOPS_RE, text, "compute rate", "197 TFLOP/s")
    value = float(match["num"]) * _FLOPS_PREFIX[match["prefix"]]
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite compute rate")
    return value


def parse_work(text: str) -> float:
    """Read an amount of work such as ``"1 TFLOP"`` in floating-point operations (a rate, FLOP/s, is refused).

    Examples
    --------
    >>> parse_work("1 TFLOP"), parse_work("2.5e9 FLOP")
    (1000000000000.0, 2500000000.0)
    >>> parse_work("1 TFLOP/s")
    Traceback (most recent call last):
    ...
    ValueError: '1 TFLOP/s' is a compute rate; an op's flops is its work: write it like '1 TFLOP'
    """
    rate = _FLOPS_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if rate is not None:
        raise ValueError(f"{text!r} is a compute rate; an op's flops is its work: write it like '{rate['num']} {rate['prefix']}FLOP'")
    match = _match(_WORK_RE, text, "number of FLOP", "1 TFLOP")
    value = float(match["num"]) * _FLOPS_PREFIX[match["prefix"]]
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite amount of work")
    return value


def parse_duration(text: str) -> float:
    """Read a duration such as ``"1 us"`` (or ``"1 µs"``) in seconds.

    Examples
    --------
    >>> parse_duration("1 us")
    1e-06
    >>> parse_duration("2.5 ms")
    0.0025
    """
    match = _match(_TIME_RE, text, "duration", "1 us")
    value = float(match["num"]) * _TIME[match["unit"]]
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite duration")
    return value


def parse_percent(text: str) -> float:
    """Read a percentage such as ``"10%"`` as a fraction.

    Examples
    --------
    >>> parse_percent("10%")
    0.1
    >>> parse_percent("250 %")
    2.5
    """
    match = _match(_PERCENT_RE, text, "percentage", "10%")
    value = float(match["num"]) / 100
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite percentage")
    return value


def format_bytes(n: float) -> str:
    """Write a byte count with a binary prefix.

    Examples
    --------
    >>> format_bytes(67108864)
    '64 MiB'
    >>> format_bytes(1536)
    '1.5 KiB'
    """
    for prefix, scale in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.4g} {prefix}B"
    return f"{n:.4g} B"


def format_seconds(t: float) -> str:
    """Write a duration with the unit that keeps the number readable.

    Examples
    --------
    >>> format_seconds(2.5e-5)
    '25 us'
    >>> format_seconds(1.5)
    '1.5 s'
    """
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(t) >= scale:
            return f"{t / scale:.6g} {unit}"
    return f"{t / 1e-9:.6g} ns"
