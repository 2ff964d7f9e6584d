"""The ``debug`` sink: the full signal trace, like the article's ``otrdeb`` class.

``debug.txt`` has a comment header, then one line per evaluation signal, in the order the
engine emitted them::

    <t_s with 9 decimals> <SIGNAL> <args>

Signal names are those of :data:`outputs.base.SIGNALS` (the article's ``otrace_sig``);
``args`` is the engine's free-text argument string (newlines replaced by spaces so one
signal stays one line). The file is written to a hidden temporary name and renamed into place.
"""
from __future__ import annotations

import numpy as np

from ccmod.atomic import atomic_path
from ccmod.outputs.base import SIGNALS, Sink
from ccmod.outputs.registry import SINKS


@SINKS.register()
class DebugSink(Sink):
    """Text dump of every evaluation signal (time, signal name, arguments).

    Parameters
    ----------
    out_dir : path, optional
    file : str
        File name inside the directory (``debug.txt``).
    """

    name = "debug"
    description = "full signal trace as text (the article's otrdeb): debug.txt"
    #: files it writes into the run directory (shown by ``ccmod sinks``)
    files = "debug.txt"
    wants_signals = True

    def __init__(self, out_dir=None, file: str = "debug.txt"):
        super().__init__(out_dir)
        self.file = file
        self.unknown: set[str] = set()

    def write(self, result, ctx=None) -> None:
        d = self.directory(ctx)
        sig = result.signals
        with atomic_path(d / self.file) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            fh.write("# ccmod signal trace: time_s signal args\n")
            if sig is None:
                fh.write("# (no signals recorded: run with the debug sink)\n")
                self.lines = 0
                return
            t = np.asarray(sig["t_s"], np.float64)
            names = [str(x) for x in sig["signal"]]
            args = [str(x).replace("\n", " ").replace("\r", " ") for x in sig["args"]]
            self.unknown = {x for x in set(names) if x not in SIGNALS}
            fh.write("".join(f"{ti:.9f} {si} {ai}\n" if ai else f"{ti:.9f} {si}\n"
                             for ti, si, ai in zip(t.tolist(), names, args)))
            self.lines = len(names)
