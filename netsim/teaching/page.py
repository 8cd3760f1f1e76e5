"""One self-contained HTML page that plays a run in the browser from its events: no images, no network.

The page holds the run's data (:func:`netsim.teaching.events.player_data`) as JSON and
the player's own script and style (``netsim/teaching/web/player.js``, ``style.css``), the
same player as ``netsim teach`` serves. ``netsim animate X -o page.html`` writes it.

Examples
--------
>>> import numpy as np, netsim
>>> text = standalone_page(netsim.all_gather(np.arange(4), algorithm="ring"))
>>> text.startswith("<!DOCTYPE html>"), "http://" in text.replace("http://www.w3.org", ""), len(text) < 100_000
(True, False, True)
"""

from __future__ import annotations

import html
import json
from importlib import resources

from netsim.result import Result
from netsim.teaching.events import player_data

__all__ = ["standalone_page"]


def _asset(name: str) -> str:
    return (resources.files("netsim.teaching") / "web" / name).read_text(encoding="utf-8")


def standalone_page(result: Result) -> str:
    """The whole page, as text: the player, its style and the run's events.

    Raises
    ------
    ValueError
        If the result carries no topology.
    """
    data = player_data(result)
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    start = "NetsimPlayer.start(document.getElementById('player'), JSON.parse(document.getElementById('run-data').textContent));"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>netsim: {html.escape(data['title'])}</title><style>{_asset('style.css')}</style></head>"
        f'<body><main><div id="player"></div></main><script type="application/json" id="run-data">{payload}</script>'
        f"<script>{_asset('player.js')}</script><script>{start}</script></body></html>\n"
    )
