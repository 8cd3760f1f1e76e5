"""Drawing with matplotlib: loading it (optional, on first drawing), and writing a drawn figure to its file whole, or not at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from netsim.destinations import staged_file

__all__ = ["save_figure"]


def _matplotlib() -> Any:
    """matplotlib, set to draw off screen (Agg); a one-line error naming the extra to install when it is missing."""
    try:
        import matplotlib
    except ImportError:
        raise ValueError("drawing needs matplotlib: pip install 'netsim[teaching]' (or pip install matplotlib pillow)") from None
    matplotlib.use("Agg", force=False)
    return matplotlib


def save_figure(figure: Any, path: Path) -> Path:
    """Save a matplotlib ``figure`` to ``path`` in the format its suffix names, via a file beside it.

    A failure (a full disk, an unknown format) leaves no partial file and an existing
    ``path`` as it was. A ``path`` that is a symbolic link stays one: the file it points
    to receives the figure (:func:`netsim.destinations.staged_file`).

    Examples
    --------
    >>> import tempfile, pathlib, matplotlib
    >>> matplotlib.use("Agg")
    >>> from matplotlib.figure import Figure
    >>> out = save_figure(Figure(), pathlib.Path(tempfile.mkdtemp()) / "a.png")
    >>> sorted(p.name for p in out.parent.iterdir())
    ['a.png']
    """
    with staged_file(path) as staged:
        figure.savefig(staged, format=Path(path).suffix[1:].lower())
    return path
