"""Analysis of a run after it played: statistics, the critical path, closed forms and why they differ.

Everything here reads what the engine recorded (a :class:`~netsim.engine.Playback`
per leaf) or evaluates formulas; nothing is simulated again. The closed forms also work
without any run, for instant estimates (``netsim estimate``).

Modules
-------
====================  ===================================================================
``stats``             :func:`~netsim.analysis.stats.run_stats`: all statistics of a run
                      (:class:`~netsim.analysis.stats.RunStats`), per device and per link
``steps``             when each algorithm step started and ended, per device and overall
``memory_over_time``  what each device holds at once: peak, at the end, in flight
``path_stats``        each hop's wait, links' longest queues, the critical path's split
                      into latency, transmission, queueing and late starts, route facts
``critical_path``     the chain of link crossings that set the finish time, step by step
``closed_forms``      closed-form costs (α–β and the scaling book's), a package by family
                      of algorithms, with the registry that picks a run's own
``why``               a run's closed form beside its simulated time, and why they differ
``across_slices``     the closed forms of a collective whose groups span slices (the DCN)
``summary``           the numbers a report shows, as JSON-ready values
``per_result``        statistics and analysis computed once per result object
====================  ===================================================================

Where a change goes
-------------------
A new closed form goes in :mod:`netsim.analysis.closed_forms` (see there). A new
statistic: a function of the playback in the module of its subject (per device or per
link in ``stats``, per step in ``steps``, memory in ``memory_over_time``, waits and the
path in ``path_stats``, or a new module beside them), a field on the dataclass that
carries it, filled in :func:`~netsim.analysis.stats.run_stats`, a doctest, and a test
against a run worked out by hand (tests/test_stats.py). The report shows it once
:mod:`netsim.cli.report` reads it. Modules import their siblings by module
(``from netsim.analysis.steps import ...``), never through this package.

Examples
--------
>>> import numpy as np, netsim
>>> from netsim.analysis.stats import run_stats
>>> stats = run_stats(netsim.all_gather(np.zeros((4, 256), np.float32), algorithm="ring"))
>>> [d.bytes_received for d in stats.devices], stats.critical_path.transfers
([3072, 3072, 3072, 3072], 3)
"""
