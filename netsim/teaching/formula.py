"""A closed form with the run's numbers written in: ``2·(n−1)·(α + s/(2B)) = 2·(4−1)·(1 us + 16 KiB/(2·45 GB/s)) = 6 us + 17.5 us``.

:func:`substituted` writes the numbers of one run (``n`` members, ``α`` per hop, ``B``
per link and ``s``) into the formula text of :mod:`netsim.analysis.closed_forms` and
checks the substitution by evaluating it: it is shown only if it gives the estimate's own
time (to 1e-9), trying ``s`` as a member's input and as its ``n``-th share (the formulas say
which in words). Formulas with other symbols (``d_i``, ``h``, ``M``) get the symbols' values
listed instead. The arithmetic is read with :mod:`ast` (numbers, the four operations,
``max``, floor, ceiling and ``lg``), never executed as code.
"""

from __future__ import annotations

import ast
import math
import operator
import re

from netsim.network.units import format_bytes, format_seconds

__all__ = ["evaluate", "substituted"]

_SYMBOLS = re.compile(r"(?<![A-Za-z_])(n|α|s|B)(?![A-Za-z_0-9])")
_ALLOWED = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_CALLS = {"max": max, "floor": math.floor, "ceil": math.ceil, "lg": math.log2}


def _python(text: str) -> str:
    """The formula's arithmetic in Python's spelling (``·`` as ``*``, ``⌈lg n⌉`` as ``ceil(lg(n))``, ``2B`` as ``2*B``)."""
    text = text.replace("·", "*").replace("−", "-").replace("α", "a")
    text = re.sub(r"⌈lg ([^⌉]+)⌉", r"ceil(lg(\1))", text)
    text = re.sub(r"⌊([^⌋]+)⌋", r"floor(\1)", text)
    text = re.sub(r"⌈([^⌉]+)⌉", r"ceil(\1)", text)
    text = re.sub(r"(?<=[0-9)])\s*(?=[A-Za-z(])", "*", text)  # 2B, 2(n-1), )(
    return re.sub(r"\*(?=(max|floor|ceil|lg)\()", "*", text)


def evaluate(formula: str, values: dict[str, float]) -> float:
    """The value of a formula's arithmetic for the given symbols.

    Raises
    ------
    ValueError
        If the formula holds anything but numbers, the symbols given, + − · /, max, ⌊⌋, ⌈⌉ and lg.

    Examples
    --------
    >>> evaluate("2·(n−1)·(α + s/(2B))", {"n": 4, "α": 1e-6, "s": 9e3, "B": 4.5e9})
    1.2e-05
    >>> evaluate("⌈lg n⌉·α", {"n": 5, "α": 1.0})
    3.0
    """
    names = {("a" if k == "α" else k): v for k, v in values.items()}

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in names:
            return float(names[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _ALLOWED:
            return _ALLOWED[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS and not node.keywords:
            return float(_CALLS[node.func.id](*(walk(a) for a in node.args)))
        raise ValueError(f"cannot evaluate {formula!r}: {ast.dump(node)[:60]}")

    try:
        tree = ast.parse(_python(formula), mode="eval")
    except SyntaxError:
        raise ValueError(f"cannot evaluate {formula!r}") from None
    return walk(tree)


def _rate(bps: float) -> str:
    return f"{bps / 1e9:.4g} GB/s"


def substituted(formula: str, n: int, alpha_s: float, bandwidth_Bps: float, input_bytes: float, time_s: float) -> str:
    """The formula's arithmetic with the run's numbers written in, checked against ``time_s``.

    Parameters
    ----------
    formula : str
        The closed form as :mod:`netsim.analysis.closed_forms` writes it (words after the first comma or colon are dropped).
    n : int
        Members of a group.
    alpha_s, bandwidth_Bps : float
        A hop's latency and a link's bandwidth.
    input_bytes : float
        One member's input.
    time_s : float
        What the formula gives for this run (the estimate's latency plus bandwidth terms).

    Returns
    -------
    str
        ``formula = the same with numbers``, or, when the numbers cannot be checked, the values of the symbols.

    Examples
    --------
    >>> substituted("2·(n−1)·(α + s/(2B)), s = input/n", 4, 1e-6, 45e9, 65536, 6e-6 + 6 * 16384 / 90e9)
    '2·(n−1)·(α + s/(2B)) = 2·(4−1)·(1 us + 16 KiB/(2·45 GB/s)) = 7.09227 us'
    >>> substituted("Σ(d_i−1)·(α + s/(2B))", 16, 1e-6, 45e9, 65536, 1e-5)
    'Σ(d_i−1)·(α + s/(2B)) with n = 16, α = 1 us, B = 45 GB/s, input = 64 KiB = 10 us'
    """
    arithmetic = re.split(r",\s|:\s", formula, maxsplit=1)[0].strip()
    for s in (input_bytes / n, input_bytes):
        values = {"n": n, "α": alpha_s, "s": s, "B": bandwidth_Bps}
        try:
            value = evaluate(arithmetic, values)
        except (ValueError, ZeroDivisionError, OverflowError):
            break
        if math.isclose(value, time_s, rel_tol=1e-9, abs_tol=1e-18):
            shown = {"n": str(n), "α": format_seconds(alpha_s), "s": format_bytes(s), "B": _rate(bandwidth_Bps)}
            written = _SYMBOLS.sub(lambda m, shown=shown: shown[m.group(1)], re.sub(r"(?<=[0-9])(?=[nαsB])", "·", arithmetic))
            return f"{arithmetic} = {written} = {format_seconds(time_s)}"
    return f"{formula} with n = {n}, α = {format_seconds(alpha_s)}, B = {_rate(bandwidth_Bps)}, input = {format_bytes(input_bytes)} = {format_seconds(time_s)}"
