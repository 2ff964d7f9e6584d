"""The ``debug`` sink: the full signal trace, like the article's ``otrdeb`` class.

``debug.txt`` has a comment header, then one line per evaluation signal, in the order the
engine emitted them::

    <t_s with 9 decimals> <SIGNAL> <args>

Signal names are those of :data:`outputs.base.SIGNALS` (the article's ``otrace_sig``);
``args`` is the engine's free-text argument string (newlines replaced by spaces so one
signal stays one line). The file is streamed to a hidden temporary name and renamed at
close.
"""
from __future__ import annotations

import os

import numpy as np

from ccmod.outputs.base import SIGNALS, Sink
from ccmod.outputs.common import SIGNAL_COLUMNS, ChunkBuffer, discard, resolve_out_dir, temp_name
from ccmod.atomic import release
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
        self.out_dir = out_dir
        self.file = file
        self._fh = None

    def open(self, ctx) -> None:
        d = resolve_out_dir(self.name, self.out_dir, ctx)
        self.final = d / self.file
        self.tmp = temp_name(self.final)
        self._fh = open(self.tmp, "w", encoding="utf-8")
        self._fh.write("# ccmod signal trace: time_s signal args\n")
        self.lines = 0
        self.unknown: set[str] = set()

    def on_signals(self, batch: dict) -> None:
        cols = ChunkBuffer(SIGNAL_COLUMNS, "signals").add(batch)
        t = np.asarray(cols["t_s"], np.float64)
        sig = [str(x) for x in cols["signal"]]
        args = [str(x).replace("\n", " ").replace("\r", " ") for x in cols["args"]]
        self.unknown.update(x for x in set(sig) if x not in SIGNALS)
        self._fh.write("".join(f"{ti:.9f} {si} {ai}\n" if ai else f"{ti:.9f} {si}\n"
                               for ti, si, ai in zip(t.tolist(), sig, args)))
        self.lines += len(sig)

    def abort(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
            discard(self.tmp)

    def close(self, result) -> None:
        if self._fh is None:
            return
        try:
            self._fh.close()
            self._fh = None
            os.replace(self.tmp, self.final)
            release(self.tmp)
        except BaseException:
            discard(self.tmp)
            raise
