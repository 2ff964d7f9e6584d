"""Errors that reach the user as one clear line and exit code 2.

Every plugin (reader, network, cost model, sink) raises :class:`CcmodInputError`
for bad user input; the CLI prints ``str(err)`` on one line and exits with 2.
"""
from __future__ import annotations

import re

#: control characters (C0, DEL, C1) and the Unicode bidi overrides: never printed raw
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: the longest ``what`` printed (a longer one is cut: it quotes too much of some input)
_MAX_WHAT = 600
#: a quoted excerpt of input ('...') in a message is cut after this many characters
_MAX_QUOTE = 64
_LONG_QUOTE = re.compile("'([^'\n]{%d})[^'\n]+'" % _MAX_QUOTE)


def one_line(text) -> str:
    """``text`` on one line, control characters shown as ``\\xNN`` (terminal-safe)."""
    s = str(text).replace("\r\n", " ").replace("\n", " ")
    return _CONTROL.sub(lambda m: ("\\x%02x" % ord(m.group())) if ord(m.group()) < 256
                        else "\\u%04x" % ord(m.group()), s)


_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text) -> str:
    """``text`` with control characters other than newline and tab shown as ``\\xNN``
    (for output that may hold names from a trace)."""
    return _CONTROL_KEEP_LINES.sub(lambda m: ("\\x%02x" % ord(m.group()))
                                   if ord(m.group()) < 256 else "\\u%04x" % ord(m.group()),
                                   str(text))


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
        # quoted input is an excerpt, never a whole line of a file that did not parse
        what = _LONG_QUOTE.sub(lambda m: f"'{m.group(1)}...'", str(self.what))
        if len(what) > _MAX_WHAT:
            what = what[:_MAX_WHAT] + "..."
        msg = f"{where}{what}"
        if self.hint:
            msg += f" ({self.hint})"
        return one_line(msg)


class TraceTooLargeError(CcmodInputError, OverflowError):
    """A trace too large for one whole-program run: an id of the kernel's int32 fields
    (message, route entry, pair, resource) past 2^31 - 1.

    An input error (one line, exit code 2) and an ``OverflowError``; a streamed run holds
    ids only for what is in flight, so the hint says how to stream the trace.
    """

    def __init__(self, what: str):
        super().__init__(what, hint="convert the trace to Parquet with `ccmod convert` and "
                                    "run it with --stream")


class DeadlockError(CcmodError):
    """The simulated application deadlocked: every unfinished rank is blocked."""

    def __init__(self, t_s: float, blocked: list[str]):
        self.t_s = t_s
        self.blocked = blocked
        shown = "; ".join(blocked[:16])
        more = f"; ... and {len(blocked) - 16} more" if len(blocked) > 16 else ""
        super().__init__(one_line(
            f"deadlock at t={t_s:.9g}s: every unfinished rank is blocked and nothing is in flight: "
            f"{shown}{more} (check the trace for unmatched sends/recvs; if the application relied on MPI's eager buffering of sends, try a larger --eager-limit (default 65536 bytes) or --send-mode eager)"))
