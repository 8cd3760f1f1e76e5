"""The command line: the only place that prints or exits (``netsim run``, ``estimate``, ``sweep``, ...)."""

from netsim.cli.main import app, main

__all__ = ["app", "main"]
