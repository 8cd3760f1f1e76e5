"""Programs end to end: collectives and compute on a sharded mesh, from a file (or an HLO module) to a run.

A module per step of the data's way, each importing only those before it:

- :mod:`~netsim.programs.ops`: a program's ops, a small tagged union
  (:class:`~netsim.programs.ops.CollectiveOp`, :class:`~netsim.programs.ops.Matmul`,
  :class:`~netsim.programs.ops.Einsum`, :class:`~netsim.programs.ops.Compute`), each
  kind's fields declared in the op registry; :meth:`Op.of <netsim.programs.ops.Op.of>` builds any.
- :mod:`~netsim.programs.model`: a :class:`~netsim.programs.model.Program` as data:
  a mesh, the arrays it starts with (:class:`~netsim.programs.model.Sharded`) and its
  :class:`~netsim.programs.model.Op` s, checked op by op.
- :mod:`~netsim.programs.files`: program YAML files read into a
  :class:`~netsim.programs.files.ProgramFile` (and a Program written back as a file's mapping).
- :mod:`~netsim.programs.lowering`: a program lowered onto a mesh as one schedule:
  every collective's transfers and every op's compute steps, with what each waits for.
- :mod:`~netsim.programs.values`: the arrays a run makes, worked out from the chunks
  the devices received, and their check against NumPy's unsharded computation.
- :mod:`~netsim.programs.run`: :func:`~netsim.programs.run.run_program` (``netsim.run_program``):
  lower, play on the topology, check, and give a :class:`~netsim.result.Result`.
- :mod:`~netsim.programs.hlo`: the text of a compiled XLA module read into steps and
  simulated the same way (``netsim program --hlo``, ``netsim.from_jax``).

:mod:`netsim.analysis.program_stats` reads a program's result.
"""
