"""Studies: many scenarios run as one experiment, into a results table and plots.

A study file (read by :mod:`netsim.studies.files`) names a base scenario and the
values to sweep (algorithms, topologies, sizes, ...). :func:`~netsim.studies.sweep.sweep`
runs every point, on local processes or a Dask cluster, into one row per point
(the simulated time beside the closed-form estimate and why they differ), written
as ``results.csv``; :func:`~netsim.studies.plots.plot_results` draws the table.

Modules
-------
========= ==========================================================================
``sweep`` run a study's points in parallel into a :class:`pandas.DataFrame`; read a
          results table back bit for bit (:func:`~netsim.studies.sweep.read_results`)
``plots`` PNG plots of a results table (matplotlib, Agg); they only read the table
========= ==========================================================================

Where a change goes
-------------------
A new field in study files goes in :mod:`netsim.studies.files` (the format) and,
if it changes how points run, in ``sweep``; a new column of the results table in
``sweep`` (``RESULT_COLUMNS``); a new kind of plot in ``plots``, which must never
simulate.
"""
