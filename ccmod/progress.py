"""The one progress-bar factory of the command line (rich, on a terminal's stderr only)."""
from __future__ import annotations

import sys


def progress_bar(total: int, label: str, unit: str, *, enabled: bool = True,
                 min_total: int = 0):
    """A transient rich progress bar of ``total`` ``unit`` labelled ``label``.

    Returns ``(bar, update)``: ``update(done, *_)`` moves it, ``bar.stop()`` ends it; or
    ``(None, None)`` when disabled, when ``total < min_total`` or when stderr is not a
    terminal (pipes, CI and tests get no escape codes).
    """
    if not enabled or total < min_total or not sys.stderr.isatty():
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
    bar = Progress(TextColumn(label), BarColumn(),
                   TextColumn(f"{{task.completed:,}}/{{task.total:,}} {unit}"),
                   TimeRemainingColumn(), transient=True, console=Console(stderr=True))
    task = bar.add_task(label, total=total)
    bar.start()
    return bar, (lambda done, *_: bar.update(task, completed=done))
