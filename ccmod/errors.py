"""Errors that reach the user as one clear line and exit code 2.

Every plugin (reader, network, cost model, sink) raises :class:`CcmodInputError`
for bad user input; the CLI prints ``str(err)`` on one line and exits with 2.
"""
from __future__ import annotations


class CcmodError(Exception):
    """Base class of every error ccmod reports to the user (exit code 2)."""

    exit_code = 2


class CcmodInputError(CcmodError):
    """Bad input: a file, a record, an option or a parameter.

    Parameters
    ----------
    what : str
        What is wrong, e.g. ``"unknown action 'sned'"``.
    source : str, optional
        File name (or option name such as ``--network``).
    line : int, optional
        1-based line or record number inside ``source``.
    hint : str, optional
        What to do about it, e.g. ``"valid actions: send, recv, ..."``.
    """

    def __init__(self, what: str, source: str | None = None, line: int | None = None,
                 hint: str | None = None):
        self.what = what
        self.source = source
        self.line = line
        self.hint = hint
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.source is not None:
            where = f"{self.source}"
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        msg = f"{where}{self.what}"
        if self.hint:
            msg += f" ({self.hint})"
        return msg.replace("\n", " ")


class DeadlockError(CcmodError):
    """The simulated application deadlocked: every unfinished rank is blocked."""

    def __init__(self, t_s: float, blocked: list[str]):
        self.t_s = t_s
        self.blocked = blocked
        shown = "; ".join(blocked[:16])
        more = f"; ... and {len(blocked) - 16} more" if len(blocked) > 16 else ""
        super().__init__(
            f"deadlock at t={t_s:.9g}s: every unfinished rank is blocked and nothing is in flight: "
            f"{shown}{more} (check the trace for unmatched sends/recvs; if the application relied on MPI's eager buffering of sends, try a larger --eager-limit (default 65536 bytes) or --send-mode eager)")
