"""``netsim teach``: start the teaching page (a local web app) and print its address."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
from typing import Annotated

import typer

from netsim.cli.console import USER_ERROR
from netsim.cli.console import fail as _fail


def _warm_up() -> None:
    """Run a small scenario once, so that the first page's run does not pay for compiling the fast player."""
    try:
        from netsim.collectives import simulate
        from netsim.teaching.web_form import scenario_of

        simulate(scenario_of({"topology": "ring", "n": 4, "op": "psum", "bytes": 4096}))
    except Exception:  # (warming is an optimisation; a failure shows on the first run instead)
        pass


def teach(
    port: Annotated[int, typer.Option("--port", metavar="PORT", min=0, max=65535, help="Port to listen on (0: any free port).")] = 8765,
    host: Annotated[
        str, typer.Option("--host", metavar="ADDRESS", help="Address to listen on; the default, 127.0.0.1, serves this machine only.")
    ] = "127.0.0.1",
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page in the default web browser.")] = False,
) -> None:
    """Start the teaching page: pick a topology, a collective and a size, watch the simulation beside its formula."""
    try:
        import uvicorn

        from netsim.teaching.web_app import create_app
    except ImportError as error:
        raise _fail(f"netsim teach needs {error.name}: pip install 'netsim[teaching]' (starlette and uvicorn)", USER_ERROR) from None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise _fail(f"--port {port}: cannot listen on {host}:{port} ({error.strerror}); pick another port, or --port 0 for any free one", USER_ERROR) from None
    sock.listen(128)
    bound = sock.getsockname()[1]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}/"
    with tempfile.TemporaryDirectory(prefix="netsim-teach-") as scratch:  # whatever a library writes goes here, removed on exit
        tempfile.tempdir = scratch
        os.environ["TMPDIR"] = scratch
        threading.Thread(target=_warm_up, daemon=True).start()
        print(f"netsim teach: {url} (Ctrl-C to stop)", flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(url)
        config = uvicorn.Config(create_app(), log_level="warning", access_log=False, limit_concurrency=200, timeout_keep_alive=5)
        try:
            uvicorn.Server(config).run(sockets=[sock])
        finally:
            sock.close()
    sys.stdout.flush()
