"""``netsim sweep STUDY -o DIR``: run every point of a study, write results.csv and plots, print a summary."""

from __future__ import annotations

import errno
import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from netsim.cli.console import INTERNAL_ERROR, POINTS_FAILED, USER_ERROR, QuietConsole, Terminated, echo, fail, interrupted_code, terminate_cleanly

__all__ = ["sweep"]


def sweep(
    study: Annotated[str, typer.Argument(metavar="STUDY", help="Study YAML file, e.g. scenarios/studies/allgather_scaling.yaml")],
    output: Annotated[str, typer.Option("-o", "--output", metavar="DIR", help="Directory for results.csv and the PNG plots.")],
    resume: Annotated[bool, typer.Option("--resume", help="Keep the rows already in DIR/results.csv and run only the others.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar (there is none either when stderr is not a terminal).")] = False,
    scheduler: Annotated[
        str | None, typer.Option("--scheduler", metavar="ADDRESS", help="Run on a Dask cluster, e.g. tcp://host:8786 (needs the cluster extra).")
    ] = None,
    workers: Annotated[int | None, typer.Option("-j", "--workers", metavar="N", help="Local worker processes (default: all cores).")] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace an output folder holding what netsim wrote there (swapped in when the sweep ends);"
            " a folder holding anything else is refused, naming it, and nothing is deleted.",
        ),
    ] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print the rows as one JSON array (shape: netsim schema sweep), not the summary.")] = False,
) -> None:
    """Run every point of a study: results.csv, plots and a summary table."""
    from concurrent.futures.process import BrokenProcessPool

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from netsim.destinations import record_written
    from netsim.studies.files import load_study
    from netsim.studies.plots import plot_results
    from netsim.studies.sweep import INTERNAL, RESULTS_FILE
    from netsim.studies.sweep import sweep as run_sweep

    counts = [0, 0]
    resumed: list[int] = []
    started = time.perf_counter()
    console = Console(stderr=True)
    bar = None
    if not quiet and console.is_terminal:
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("points"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
        )

    def progress(done: int, total: int) -> None:
        if not resumed:
            resumed.append(done)
        counts[:] = [done, total]
        if bar is not None:
            bar.update(task, completed=done, total=total)

    terminate_cleanly()  # kill (not only Ctrl-C) also keeps the finished rows, and exits 143
    staged = None
    try:
        staged = _sweep_folder(output, resume, force, study)
        loaded = load_study(study)
        if bar is not None:
            task = bar.add_task(f"sweep {loaded.name}", total=len(loaded.points))
            bar.start()
        try:
            where = staged.path if staged is not None else output
            table = run_sweep(loaded, output=where, resume=resume, workers=workers, scheduler=scheduler, progress=progress)
        finally:
            if bar is not None:
                bar.stop()
        if loaded.program:
            from netsim.studies.program_plots import per_chip_params, plot_program_results

            plots = plot_program_results(table, where, loaded.name, per_chip_params(loaded.points[0].data) if loaded.points else None)
        else:
            plots = plot_results(table, where, loaded.plots, loaded.name)
        record_written(where, [RESULTS_FILE, *(plot.path.name for plot in plots)])  # what --force may replace later
        if staged is not None:
            staged.commit()
            staged.finish()
    except (KeyboardInterrupt, Terminated) as interrupt:  # Ctrl-C (130) or SIGTERM (143)
        what = "terminated" if isinstance(interrupt, Terminated) else "interrupted"
        if staged is not None:
            staged.discard()
            raise fail(f"{what}: nothing written; {output} is as it was", interrupted_code(interrupt)) from None
        kept = f"{counts[0]} of {counts[1]} points kept in {Path(output) / RESULTS_FILE}" if counts[1] else "no points run"
        raise fail(f"{what}: {kept}; run again with --resume to finish", interrupted_code(interrupt)) from None
    except BrokenProcessPool as error:
        if staged is not None:
            staged.discard()
        message = f"a worker process died ({error}); out of memory? Finished rows are in {Path(output) / RESULTS_FILE}; --resume continues"
        raise fail(message, INTERNAL_ERROR) from None
    except OSError as error:  # a full disk, a folder that cannot be made: name where
        if staged is not None:
            staged.discard()
        raise fail(_cannot_write(error, output), USER_ERROR) from None
    except (ValueError, ImportError) as error:
        if staged is not None:
            staged.discard()
        raise fail(str(error), USER_ERROR) from None
    output = Path(output)
    if json_output:
        from netsim.cli.records import sweep_records

        echo(json.dumps(sweep_records(table), indent=2, allow_nan=False))
    else:
        _print_sweep(table, loaded.name, output, resumed, time.perf_counter() - started, plots)
    internal = int(table["error"].str.startswith(INTERNAL, na=False).sum())
    failed = int(table["error"].notna().sum())
    if internal:
        raise fail(f"{internal} point(s) hit an internal error in netsim (see the error column of {output / RESULTS_FILE}); please report it", INTERNAL_ERROR)
    if failed:
        raise fail(f"{failed} of {len(table)} points failed (see the error column of {output / RESULTS_FILE})", POINTS_FAILED)


def _print_sweep(table: Any, name: str, output: Path, resumed: list[int], seconds: float, plots: list[Any]) -> None:
    from netsim.cli.console import wrap_prose
    from netsim.cli.tables import sweep_rows, sweep_table
    from netsim.studies.sweep import RESULTS_FILE

    out = QuietConsole(highlight=False)
    summary = sweep_table(f"netsim sweep: {name}", *(parts := sweep_rows(table))[:2], out.width)
    more = parts[2]
    out.print(summary)
    failed = int(table["error"].notna().sum())
    for record in table[table["error"].notna()].head(len(parts[1])).to_dict("records"):
        out.print(wrap_prose(f"#{record['point']} failed: {record['error']}", out.width), markup=False, soft_wrap=True)
    if more:
        out.print(f"... {more} more rows in {output / RESULTS_FILE}", markup=False)
    line = (
        f"{len(table)} points: {len(table) - failed} ok, {failed} failed"
        f"{f', {resumed[0]} kept from an earlier run' if resumed and resumed[0] else ''}"
        f" ({seconds:.1f} s); wrote {output / RESULTS_FILE} and {len(plots)} plot{'s' if len(plots) != 1 else ''}:"
        f" {', '.join(p.path.name for p in plots) or 'none'}"
    )
    out.print(wrap_prose(line, out.width), markup=False, soft_wrap=True)


_WRITING = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG, errno.EACCES, errno.EPERM, errno.ENOENT, errno.ENOTDIR, errno.EISDIR}


def _cannot_write(error: OSError, output: str) -> str:
    """One line for an OSError while a sweep writes: the file (never one staged beside it) or the --output folder, and why.

    Examples
    --------
    >>> _cannot_write(OSError(28, "No space left on device"), "results")
    'cannot write in results: No space left on device'
    >>> _cannot_write(OSError(2, "No such file or directory", "/proc/x"), "/proc/x")
    'cannot write /proc/x: No such file or directory'
    """
    if error.errno not in _WRITING and not error.filename:
        return str(error)  # not the disk's: a connection to a Dask scheduler, say
    name = str(error.filename) if error.filename else ""
    if name and ".netsim-" not in Path(name).name:
        return f"cannot write {name}: {error.strerror or error}"
    return f"cannot write in {output}: {error.strerror or error}"


def _sweep_folder(output: str, resume: bool, force: bool, study: str) -> Any:
    """Check ``sweep --output``; with ``--force`` onto a folder that holds files, the folder staged beside it (swapped in at the end)."""
    from netsim.destinations import StagedFolder, check_folder

    if output == "":
        raise ValueError("--output '': give a folder name such as results")
    if resume:
        return None
    path = check_folder("--output", output, force, inputs=[study])  # (any file netsim did not write is refused whole)
    if not (force and path.is_dir() and any(path.iterdir())):
        return None
    return StagedFolder(path)
