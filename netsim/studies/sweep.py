"""Sweeps: run every point of a study, in parallel, into one results table.

:func:`sweep` expands a study (:mod:`netsim.studies.files`) into scenarios, simulates each on
local processes (all cores by default) or on a Dask distributed cluster, and returns
one row per point as a :class:`pandas.DataFrame`. With an output directory the rows
go to ``results.csv`` as they finish (so an interrupted sweep keeps them, and
``resume=True`` skips them next time); when the sweep ends or is interrupted the
file is rewritten sorted by point, so the same study always gives the same bytes.

A row holds the point's index, the label of every swept field, what ran
(collective, algorithm, topology, devices, group size, bytes), the simulated time,
the closed-form estimate of :mod:`netsim.analysis.closed_forms` for the same algorithm and layout
(empty where there is none), their ratio, the regime (latency- or bandwidth-bound),
the one-line reason when time and estimate differ by more than 1 %
(:mod:`netsim.analysis.why`), nccl-tests' algbw and busbw, whether the output was
verified, and the error that stopped the point, if any.
Cells are text in the CSV: floats are written with ``repr``, so they read back bit
for bit (:func:`read_results`).

Why pandas: a sweep's result is a table that people filter, group and plot, and
the CSV it is written to reads straight back into one; pandas is the table every
Python user already knows. It is imported only when a table is built, so
``import netsim`` and Dask workers do not pay for it.
"""

from __future__ import annotations

import csv
import io
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netsim.analysis.why import analyse
from netsim.collectives import simulate
from netsim.destinations import staged_file
from netsim.engine import EngineError
from netsim.scenario import ScenarioError
from netsim.studies.files import Point, Study, load_study, study_from_data
from netsim.studies.program_sweep import PROGRAM_COLUMNS, program_row
from netsim.studies.resume import HASH_COLUMN, finished_rows, point_files, row_hash

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RESULTS_FILE", "RESULT_COLUMNS", "columns", "read_results", "run_point", "sweep"]

RESULTS_FILE = "results.csv"

RESULT_COLUMNS = (
    "collective",
    "algorithm",
    "topology",
    "n_devices",
    "group_size",
    "bytes_per_device",
    "total_bytes",
    "time_s",
    "estimate_s",
    "estimate_kind",
    "ratio",
    "regime",
    "why",
    "algbw_Bps",
    "busbw_Bps",
    "verified",
    "error",
    HASH_COLUMN,
)
"""The measured columns of a results table, after ``point`` and the swept fields.

A swept field of the same name (``algorithm``, ``topology``) takes the place of the
measured one: its label is what the study says."""

_DTYPES = {
    "point": "int64",
    **dict.fromkeys(("n_devices", "group_size", "bytes_per_device", "total_bytes"), "Int64"),
    **dict.fromkeys(("time_s", "estimate_s", "ratio", "algbw_Bps", "busbw_Bps"), "float64"),
    **dict.fromkeys(("compute_s", "communication_s", "exposed_communication_s", "peak_flops", "link_bandwidth_Bps"), "float64"),
    "verified": "boolean",
}
"""Column types of a results table; the others (labels, names, regime, error) are text."""

INTERNAL = "internal error: "
"""How the error cell of a point that hit a bug in netsim starts."""

Progress = Callable[[int, int], None]


def columns(study: Study) -> list[str]:
    """The columns of a study's results table, in order.

    Examples
    --------
    >>> columns(load_study("scenarios/studies/ring_algorithms.yaml"))[:5]
    ['point', 'algorithm', 'input.bytes_per_device', 'data', 'collective']
    """
    measured = PROGRAM_COLUMNS if study.program else RESULT_COLUMNS
    return ["point", *study.fields, *(c for c in measured if c not in study.fields)]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return " ".join(str(value).split()) if isinstance(value, str) else str(value)


def run_point(point: Point) -> dict[str, str]:
    """Simulate one point and return its row as CSV cells (never raises for a bad point).

    A point that is not a valid scenario, or whose simulation fails, gets its error
    message in the ``error`` cell; one that hits a bug in netsim gets an ``error``
    starting with ``"internal error: "``.

    Examples
    --------
    >>> study = load_study("scenarios/studies/ring_algorithms.yaml")
    >>> row = run_point(study.points[0])
    >>> row["algorithm"], row["verified"], row["error"]
    ('ring', 'True', '')
    """
    files = point_files(point)  # what the point reads, hashed before it runs
    row = _cells(point)
    row[HASH_COLUMN] = row_hash(point, row, files)
    return row


def _cells(point: Point) -> dict[str, str]:
    if point.program:
        return program_row(point, INTERNAL)
    row = {"point": str(point.index), **dict(point.labels)}
    try:
        scenario = point.scenario()
        result = simulate(scenario)
    except ScenarioError as error:
        return {**row, "error": _cell(f"{error.field}: {error.problem}" if error.field else error.problem)}
    except EngineError as error:
        return {**row, "error": _cell(INTERNAL + str(error))}
    except (ValueError, MemoryError) as error:
        return {**row, "error": _cell(str(error) or type(error).__name__)}
    except Exception as error:  # a bug: record it and go on with the other points
        return {**row, "error": _cell(f"{INTERNAL}{type(error).__name__}: {error}")}
    analysis = analyse(result)
    measured = {
        "collective": result.collective,
        "algorithm": result.algorithm,
        "topology": result.topology,
        "n_devices": result.n_devices,
        "group_size": result.group_size,
        "bytes_per_device": result.bytes_per_device,
        "total_bytes": result.total_bytes,
        "time_s": result.time,
        "estimate_s": analysis.estimate.time_s if analysis.estimate is not None else None,
        "estimate_kind": analysis.estimate.kind if analysis.estimate is not None else "none",
        "ratio": analysis.ratio,
        "regime": analysis.regime,
        "why": analysis.why,
        "algbw_Bps": result.algbw,
        "busbw_Bps": result.busbw,
        "verified": result.verified,
        "error": "",
    }
    for name, value in measured.items():
        row.setdefault(name, _cell(value))
    return row


def _as_study(study: Study | str | Path | dict[str, Any]) -> Study:
    if isinstance(study, Study):
        return study
    if isinstance(study, (str, Path)):
        return load_study(study)
    if isinstance(study, dict):
        return study_from_data(study)
    raise ValueError(f"study must be a Study, a path to a study file or a mapping, got {type(study).__name__}")


def sweep(
    study: Study | str | Path | dict[str, Any],
    *,
    output: str | Path | None = None,
    resume: bool = False,
    workers: int | None = None,
    scheduler: Any = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Run every point of a study and return the results table, one row per point.

    Parameters
    ----------
    study : Study, str, pathlib.Path or dict
        A study, a study file, or a study mapping (as the file holds it).
    output : str or pathlib.Path, optional
        Directory for ``results.csv``; rows are written as they finish and the file
        is rewritten sorted by point at the end (or on Ctrl-C).
    resume : bool, default False
        Keep the rows already in ``output/results.csv`` and run only the others.
    workers : int, optional
        Local worker processes; default all cores. 1 runs in this process.
    scheduler : str, dask.distributed.Client or cluster, optional
        Run on a Dask cluster instead: a scheduler address (``"tcp://host:8786"``),
        a client, or a cluster object (e.g. ``LocalCluster``). Needs the ``cluster``
        extra; Dask is imported only then.
    progress : callable, optional
        Called as ``progress(done, total)`` at the start and after every point.

    Returns
    -------
    pandas.DataFrame
        The rows sorted by ``point``, as :func:`read_results` reads ``results.csv``.

    Raises
    ------
    ScenarioError
        If the study file is malformed (a bad *point* is a row with an error instead).
    ValueError
        If the arguments conflict, or ``results.csv`` to resume belongs to another study.
    ImportError
        If a scheduler is given and Dask is not installed.

    Examples
    --------
    >>> base = {"topology": "ring4", "collective": {"op": "all_gather"}, "input": {"bytes_per_device": "1 KiB"}}
    >>> grid = {"algorithm": ["ring", "bidirectional_ring"], "input.bytes_per_device": ["1 KiB", "1 MiB"]}
    >>> table = sweep({"name": "demo", "base": base, "grid": grid}, workers=1)
    >>> table[["point", "algorithm", "input.bytes_per_device", "verified"]]
       point           algorithm input.bytes_per_device  verified
    0      0                ring                  1 KiB      True
    1      1                ring                  1 MiB      True
    2      2  bidirectional_ring                  1 KiB      True
    3      3  bidirectional_ring                  1 MiB      True
    """
    study = _as_study(study)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a whole number >= 1, got {str(workers)[:40]}")
    if workers is not None and scheduler is not None:
        raise ValueError("give workers (local processes) or a Dask scheduler, not both: the cluster has its own workers")
    if resume and output is None:
        raise ValueError("resume needs an output directory holding the results.csv to resume")
    if str(output) == "":
        raise ValueError("output '': give a folder name such as results")
    header = columns(study)
    directory = Path(output) if output is not None else None
    if directory is not None and directory.exists() and not directory.is_dir():
        raise ValueError(f"output {str(directory)!r} is a file, not a directory")
    if directory is not None and not resume and directory.is_dir() and any(directory.iterdir()):
        raise ValueError(f"output {str(directory)!r}: the folder exists and holds files; resume it, or name a new (or empty) folder")
    workers = _worker_count(workers, len(study.points))
    path = directory / RESULTS_FILE if directory is not None else None
    finished = finished_rows(path, study, header, INTERNAL) if path is not None and resume else {}
    client, own = _dask_client(scheduler) if scheduler is not None else (None, False)
    try:
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
        return _run(study, header, path, finished, workers, client, progress)
    finally:
        if own:
            client.close()


def _run(
    study: Study,
    header: list[str],
    path: Path | None,
    finished: dict[int, dict[str, str]],
    workers: int | None,
    client: Any,
    progress: Progress | None,
) -> pd.DataFrame:
    """Run the points not finished yet, writing rows as they come; results.csv sorted at the end."""
    todo = [p for p in study.points if p.index not in finished]
    total = len(study.points)
    if progress is not None:
        progress(len(finished), total)
    stream = _open_results(path, header, finished)
    try:
        runs = _run_local(todo, workers or 1) if client is None else _run_dask(todo, client)
        with closing(runs):
            for row in runs:
                finished[int(row["point"])] = row
                if stream is not None:
                    csv.writer(stream, lineterminator="\n").writerow(row.get(c, "") for c in header)
                    stream.flush()
                if progress is not None:
                    progress(len(finished), total)
    finally:
        if stream is not None:
            stream.close()
        text = _csv_text(header, [finished[i] for i in sorted(finished)])
        if path is not None:
            _replace(path, text)
    return read_results(io.StringIO(text))


def _csv_text(header: list[str], rows: list[dict[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(row.get(c, "") for c in header)
    return buffer.getvalue()


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole, through a file beside it (a symbolic link is followed: :func:`netsim.destinations.staged_file`)."""
    with staged_file(path) as staged:
        staged.write_text(text, encoding="utf-8", newline="")


def _open_results(path: Path | None, header: list[str], kept: dict[int, dict[str, str]]) -> io.TextIOWrapper | None:
    """Start results.csv with the kept rows; new rows are appended as they finish."""
    if path is None:
        return None
    _replace(path, _csv_text(header, [kept[i] for i in sorted(kept)]))
    return path.open("a", encoding="utf-8", newline="")


def cores() -> int:
    """The cores this process may run on.

    Examples
    --------
    >>> cores() >= 1
    True
    """
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


MAX_WORKERS_PER_CORE = 4
"""Local workers asked for beyond the cores are allowed up to this many per core."""


def _worker_count(workers: int | None, points: int) -> int:
    """Workers to start: as asked (at most :data:`MAX_WORKERS_PER_CORE` per core), else one per core; never more than points."""
    available = cores()
    most = MAX_WORKERS_PER_CORE * available
    if workers is not None and workers > most:
        raise ValueError(f"workers {workers} is more than {MAX_WORKERS_PER_CORE} per core on this machine ({available} cores); give at most {most}")
    return max(1, min(workers or available, points))


_PR_SET_PDEATHSIG = 1


def _worker_signals(parent: int | None = None) -> None:
    """Workers leave Ctrl-C to the parent, which stops the sweep and keeps the rows; it ends them with SIGTERM.

    On Linux a worker is killed when its parent dies, however it dies (``kill -9`` too).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the pool's own checks end idle workers
        return
    if parent is not None and os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _start_method() -> str:
    """fork when it is safe (a single thread, on a system that has it), else spawn.

    fork starts workers at once and needs no ``if __name__ == "__main__"`` guard in the
    user's script; it is not safe once the parent runs threads (a progress bar, a Dask
    client), and there spawn starts clean interpreters instead.
    """
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def _run_local(points: list[Point], workers: int) -> Iterator[dict[str, str]]:
    if workers == 1 or len(points) <= 1:
        for point in points:
            yield run_point(point)
        return
    context = multiprocessing.get_context(_start_method())
    pool = ProcessPoolExecutor(max_workers=min(workers, len(points)), mp_context=context, initializer=_worker_signals, initargs=(os.getpid(),))
    finished = False
    try:
        futures = [pool.submit(run_point, point) for point in points]
        for future in as_completed(futures):
            yield future.result()
        finished = True
    finally:
        if not finished:
            _stop_workers(pool)
        pool.shutdown(wait=not finished, cancel_futures=True)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End the workers of an interrupted sweep now, not when their current points finish."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _dask_client(scheduler: Any) -> tuple[Any, bool]:
    """A Dask client for the scheduler given, and whether the sweep owns (and closes) it."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise ImportError("sweeping on a Dask cluster needs the cluster extra: pip install -e '.[cluster]'") from None
    if isinstance(scheduler, Client):
        return scheduler, False
    if isinstance(scheduler, str) or hasattr(scheduler, "scheduler_address"):
        return _connect(Client, scheduler), True
    raise ValueError(f"scheduler must be an address such as 'tcp://host:8786', a dask.distributed.Client or a cluster, got {scheduler!r}")


SCHEDULER_TIMEOUT_S = 10.0
"""How long a Dask scheduler has to answer before the sweep gives up on it."""


def _connect(client_class: Any, scheduler: Any) -> Any:
    """A client of ``scheduler``, or OSError within :data:`SCHEDULER_TIMEOUT_S` (plus a little) if it does not answer as Dask does.

    The connection is made on a thread of its own, so a listener that never speaks, or
    speaks another protocol, cannot hold the sweep past the timeout.
    """
    address = str(getattr(scheduler, "scheduler_address", scheduler))[:200]
    outcome: list[Any] = []

    def connect() -> None:
        try:
            outcome.append(client_class(scheduler, timeout=f"{SCHEDULER_TIMEOUT_S}s"))
        except BaseException as error:  # any failure: reported below as one line
            outcome.append(error)

    thread = threading.Thread(target=connect, name="netsim-dask-connect", daemon=True)
    thread.start()
    thread.join(SCHEDULER_TIMEOUT_S + 5)
    if not outcome:
        raise OSError(f"the Dask scheduler {address} did not answer within {SCHEDULER_TIMEOUT_S:g} s; is it a Dask scheduler, and running?")
    if isinstance(outcome[0], BaseException):
        error = outcome[0]
        raise OSError(f"cannot reach the Dask scheduler {address}: {type(error).__name__}: {str(error)[:200]}; is it a Dask scheduler, and running?")
    return outcome[0]


def _run_dask(points: list[Point], client: Any) -> Iterator[dict[str, str]]:
    from dask.distributed import as_completed as dask_completed

    futures = []
    try:
        futures = client.map(run_point, points, pure=False)
        for future in dask_completed(futures):
            yield future.result()
    finally:
        client.cancel([f for f in futures if not f.done()])


def read_results(source: str | Path | io.StringIO) -> pd.DataFrame:
    """Read a results table (``results.csv``) back, floats bit for bit.

    Swept fields stay text (their labels, as the study wrote them); the measured
    columns are numbers, booleans or text, with empty cells as missing values.

    Examples
    --------
    >>> table = read_results(io.StringIO("point,algorithm,time_s,error\\n0,ring,1.5e-06,\\n"))
    >>> table["algorithm"][0], float(table["time_s"][0]), bool(table["error"].isna()[0])
    ('ring', 1.5e-06, True)
    """
    import pandas as pd

    if isinstance(source, io.StringIO):
        header = next(csv.reader(io.StringIO(source.getvalue())), [])
    else:
        with open(source, encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle), [])
    swept = [c for c in header if c != "point" and c not in RESULT_COLUMNS and c not in PROGRAM_COLUMNS]
    measured = [c for c in header if c not in swept]
    return pd.read_csv(
        source,
        dtype={c: _DTYPES.get(c, str) for c in header},
        keep_default_na=False,
        na_values={c: [""] for c in measured},
        # pandas 3 reads floats round-trip by default (and deprecates the argument); pandas 2 needs asking.
        **({"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}),
    )
