"""``netsim teach``: the teaching page as a small ASGI app (Starlette), served by uvicorn on 127.0.0.1.

Routes
------
``GET /``                 the page (``web/index.html``)
``GET /assets/{name}``    one of the page's own files, looked up by name in :data:`ASSETS`
                          (read from the package once, at start): no path from a request
                          reaches the file system
``GET /api/options``      the page's choices (:func:`netsim.teaching.web_form.options`)
``POST /api/algorithms``  the algorithms that apply to a setup, with one line each
``POST /api/run``         a run's player data (:func:`netsim.teaching.events.player_data`)
``POST /api/sweep``       the size sweep (:func:`netsim.teaching.web_sweep.sweep`)

Every request is bounded: a body of at most :data:`MAX_BODY` bytes, checked fields
(:mod:`netsim.teaching.web_form`, the same one-line errors as a scenario file), a run
within the page's limits (refused before it runs), one simulation at a time with at most
:data:`MAX_WAITING` waiting (others are told the server is busy). An error is one line of
JSON, ``{"error": ...}``, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from importlib import resources
from typing import Any

__all__ = ["ASSETS", "MAX_BODY", "MAX_WAITING", "create_app"]

MAX_BODY = 4096
"""Most bytes a request's body may have (the page sends about 200)."""

MAX_WAITING = 8
"""Most requests waiting for the simulation at once; more are answered 503 at once."""

_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".html": "text/html; charset=utf-8"}
_POLICY = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'"
_HEADERS = {
    "Content-Security-Policy": _POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _read_assets() -> dict[str, bytes]:
    """The page's files, by name, read once from the package (``netsim/teaching/web``)."""
    folder = resources.files("netsim.teaching") / "web"
    return {entry.name: entry.read_bytes() for entry in folder.iterdir() if entry.name.endswith(tuple(_TYPES))}


ASSETS: dict[str, bytes] = {}
"""Name -> bytes of every file the page may load; filled by :func:`create_app`."""


def _clean(value: Any) -> Any:
    """JSON-ready, with non-finite floats as null (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def create_app() -> Any:
    """The Starlette app of the teaching page.

    Examples
    --------
    >>> app = create_app()
    >>> sorted(ASSETS), [route.path for route in app.routes][:3]
    (['app.js', 'index.html', 'player.js', 'style.css', 'sweep.js'], ['/', '/favicon.ico', '/assets/{name}'])
    """
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from netsim.scenario.errors import ScenarioError

    ASSETS.update(_read_assets())
    gate = asyncio.Semaphore(1)
    waiting = [0]

    def answer(body: Any, status: int = 200, began: float | None = None) -> Response:
        headers = dict(_HEADERS)
        if began is not None:  # the server's own time for the request (read by bench/teach.py)
            headers["Server-Timing"] = f"app;dur={(time.perf_counter() - began) * 1e3:.3f}"
        return JSONResponse(_clean(body), status_code=status, headers=headers)

    async def page(request: Request) -> Response:
        return Response(ASSETS["index.html"], media_type=_TYPES[".html"], headers=_HEADERS)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS or name == "index.html":
            return Response("not found", status_code=404, media_type="text/plain", headers=_HEADERS)
        return Response(ASSETS[name], media_type=_TYPES["." + name.rsplit(".", 1)[-1]], headers=_HEADERS)

    async def fields(request: Request) -> dict[str, Any]:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise ScenarioError("page", "", f"the request is over {MAX_BODY} bytes; the page sends its fields only")
        try:
            params = json.loads(body or b"{}")
        except (ValueError, RecursionError):
            raise ScenarioError("page", "", "the request is not JSON; send the page's fields as a JSON object") from None
        if not isinstance(params, dict):
            raise ScenarioError("page", "", "the request must be a JSON object of the page's fields")
        return params

    def api(work: Any, simulates: bool) -> Any:
        async def endpoint(request: Request) -> Response:
            began = time.perf_counter()
            try:
                params = await fields(request)
                if not simulates:
                    return answer(await asyncio.to_thread(work, params), began=began)
                if waiting[0] >= MAX_WAITING:
                    return answer({"error": f"busy: {waiting[0]} runs are waiting; try again in a moment"}, 503)
                waiting[0] += 1
                try:
                    async with gate:
                        return answer(await asyncio.to_thread(work, params), began=began)
                finally:
                    waiting[0] -= 1
            except (ValueError, MemoryError) as error:
                return answer({"error": str(error).splitlines()[0] if str(error) else type(error).__name__}, 400, began)
            except Exception as error:  # a bug in netsim: one line, never a traceback
                return answer({"error": f"internal error in netsim: {type(error).__name__}: {error}; this is a bug in netsim, please report it"}, 500)

        return endpoint

    async def options(request: Request) -> Response:
        from netsim.teaching.web_form import options as choices

        return answer(choices())

    return Starlette(
        routes=[
            Route("/", page),
            Route("/favicon.ico", lambda request: Response(status_code=204, headers=_HEADERS)),
            Route("/assets/{name}", asset),
            Route("/api/options", options),
            Route("/api/algorithms", api(_algorithms, False), methods=["POST"]),
            Route("/api/run", api(_run, True), methods=["POST"]),
            Route("/api/sweep", api(_sweep, True), methods=["POST"]),
        ]
    )


def _algorithms(params: dict[str, Any]) -> dict[str, Any]:
    from netsim.teaching.web_form import applicable

    return applicable(params)


def _run(params: dict[str, Any]) -> dict[str, Any]:
    """Check the request and its limits (before running), simulate it and return its player data."""
    from netsim.collectives import simulate
    from netsim.teaching.events import player_data
    from netsim.teaching.web_form import check_limits, scenario_of

    work = check_limits(scenario_of(params, build_topology=False))
    result = simulate(scenario_of(params))
    data = player_data(result)
    data["work"] = work
    data["verified"] = bool(getattr(result, "verified", False))
    return data


def _sweep(params: dict[str, Any]) -> dict[str, Any]:
    from netsim.teaching.web_sweep import sweep

    return sweep(params)
