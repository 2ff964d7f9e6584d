"""Reader for SimGrid time-independent (TI) traces, registered as ``ti``.

Layouts (see docs/trace-formats.md):

* **one file** holding the actions of every rank (``<rank> <action> <args>`` per line;
  ranks may interleave in any way, each rank's lines keep their file order);
* a **description file**: every line is the path of one per-rank trace file (SimGrid's
  ``smpi_replay.txt``); relative paths are looked up next to the description file, then
  in each parent folder (SimGrid resolves them from the folder it is run in), then in
  the current folder; the file found must lie inside the description file's folder
  unless ``--allow-outside-paths`` is given. The number of listed files is the number of
  ranks;
* a **folder**: every TI file in it (natural name order) as if listed in a description;
* SimGrid ``replay_multiple`` description files (``<instance> <file> <size> <delay>``):
  instances are placed side by side (ranks offset), see :func:`read_replay_multiple`.
"""
from __future__ import annotations

import gzip
import os
import re
import zlib
from pathlib import Path

from ccmod.errors import CcmodInputError
from ccmod.guard import excerpt, inside_folder, open_gzip_bounded
from ccmod.workloads import ti_fast
from ccmod.workloads.registry import READERS
from ccmod.workloads.ti_parse import VALID_ACTIONS, WAIT_IDS, TIParser, looks_untagged

_ACTIONS = frozenset(VALID_ACTIONS)
_HEAD_BYTES = 1 << 16
_SYNTAXES = ("auto", "tagged", "untagged")


def read_source(path: Path) -> bytes | str:
    """A (possibly gzip'd) text file's contents, as text mode reads them (UTF-8, ``\r\n``
    and ``\r`` made ``\n``); every failure becomes CcmodInputError.

    An ASCII file is returned as its bytes (the fast reader's input: no decoding, no
    re-encoding of megabytes; a large one as a
    :class:`~ccmod.workloads.ti_bytes.MappedText`), anything else as the decoded text;
    :func:`as_text` makes any of them a ``str``.
    """
    try:
        if path.suffix == ".gz":
            with open_gzip_bounded(path, "rb") as f:
                data = f.read()
        else:
            with open(path, "rb", buffering=0) as f:
                mapped = _read_mapped(f)
                if mapped is not None:
                    return mapped
                data = f.read()
        if not data.isascii():
            text = data.decode("utf-8")
            del data
            if "\r" in text:
                text = text.replace("\r\n", "\n").replace("\r", "\n")
            if "\x00" in text:
                raise _nul(path)
            return text
    except UnicodeDecodeError:
        raise CcmodInputError("not a text file (cannot decode as UTF-8)", source=str(path),
                              hint="is this a binary trace? try --format") from None
    except (OSError, EOFError, zlib.error) as exc:
        why = getattr(exc, "strerror", None) or ("not a valid gzip file" if
                                                   path.suffix == ".gz" else type(exc).__name__)
        raise CcmodInputError(f"cannot read: {excerpt(why, 80)}",
                              source=str(path), hint="is the file truncated?") from None
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if b"\x00" in data:
        raise _nul(path)
    return data


def _read_mapped(f):
    """A large file's ASCII contents as a :class:`~ccmod.workloads.ti_bytes.MappedText`
    (read into pages mapped at once, checked by one compiled pass), or None: then ``f``
    is at its start, to be read plainly (small, not ASCII, ``\r`` or NUL bytes, numba's
    JIT off, or a file that changed while read)."""
    from ccmod.jit import jit_enabled
    size = os.fstat(f.fileno()).st_size
    if size < ti_fast.FAST_MIN_BYTES or not jit_enabled():
        return None
    from ccmod.workloads import ti_bytes as tb
    m = tb.read_mapped(f, size)
    if m is None or m.counts[tb.C_HIGH] or m.counts[tb.C_CR] or m.counts[tb.C_NUL]:
        f.seek(0)
        return None
    return m


def _nul(path: Path) -> CcmodInputError:
    return CcmodInputError("not a text file (contains NUL bytes)", source=str(path),
                           hint="is this a binary trace? try --format")


def as_text(src: bytes | str) -> str:
    """:func:`read_source`'s contents as text."""
    return src if isinstance(src, str) else src[:].decode("ascii")


def _head_lines(path: Path, nbytes: int = _HEAD_BYTES) -> list[str]:
    """First lines of a file for sniffing (no error: unreadable -> [])."""
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as f:
            data = f.read(nbytes)
    except (OSError, EOFError):
        return []
    if b"\x00" in data:
        return []
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()
    if len(data) == nbytes and lines:
        lines = lines[:-1]  # the last one may be cut
    return lines


def _first_tokens(lines) -> tuple[list[str], int]:
    for ln, raw in enumerate(lines, 1):
        raw = raw.split("#", 1)[0]
        toks = raw.split()
        if toks:
            return toks, ln
    return [], 0


def _is_action_line(toks) -> bool:
    return len(toks) >= 2 and toks[0].isdigit() and toks[1] in _ACTIONS


def _looks_like_ti(lines, path: Path) -> bool:
    """Lenient sniff: '<int> <word> ...' lines and a .ti name, or a known action soon after."""
    sig = [t for t in (raw.split("#", 1)[0].split() for raw in lines[:200]) if t][:20]
    if not sig or not all(len(t) >= 2 and t[0].isdigit() and t[1][:1].isalpha() for t in sig):
        return False
    name = path.name.lower()
    return name.endswith((".ti", ".ti.gz")) or any(t[1] in _ACTIONS for t in sig)


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def resolve_listed(desc: Path, entry: str, strict: bool = False) -> Path | None:
    """Find a trace file named in description file ``desc`` (see module doc).

    Only files inside the description file's folder count (``--allow-outside-paths``
    lifts this): a description file must not make ccmod read, and quote in an error, a
    file the user did not mean. ``strict`` raises when the only match lies outside.
    """
    p = Path(entry)
    base = desc.resolve().parent
    cands = [p] if p.is_absolute() else [folder / p for folder in (base, *base.parents,
                                                                   Path.cwd())]
    outside = None
    for cand in cands:
        if cand.is_file():
            if inside_folder(cand, base):
                return cand
            outside = outside or cand
    if strict and outside is not None:
        raise CcmodInputError(f"listed file '{excerpt(entry, 80)}' is outside the "
                              "description file's folder", source=str(desc),
                              hint="move it next to the description file, or pass "
                                   "--allow-outside-paths if you trust this file")
    return None


def _natural_key(p: Path):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)]


def folder_files(folder: Path) -> list[Path]:
    """TI action files of a folder, in natural name order (rank 2 before rank 10)."""
    try:
        entries = [p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")]
    except OSError as exc:
        raise CcmodInputError(f"cannot list folder: {exc.strerror or exc}",
                              source=str(folder)) from None
    files = [p for p in entries if _is_action_line(_first_tokens(_head_lines(p, 4096))[0])]
    return sorted(files, key=_natural_key)


@READERS.register()
class TIReader:
    """SimGrid time-independent trace: one file, per-rank files + description, or a folder."""

    name = "ti"
    description = ("SimGrid time-independent (TI) trace: one file, per-rank files listed in "
                   "a description file, or a folder of per-rank files")
    extensions = (".ti", ".txt", ".ti.gz", ".txt.gz")

    def sniff(self, path) -> bool:
        path = Path(path)
        if path.is_dir():
            try:
                return bool(folder_files(path))
            except CcmodInputError:
                return False
        head = _head_lines(path)
        toks, _ = _first_tokens(head)
        if _is_action_line(toks):
            return True
        if _looks_like_ti(head, path):
            return True  # a typo on the first line: let the reader report it with its line
        if len(toks) == 1:
            listed = resolve_listed(path, toks[0])
            return listed is not None and _is_action_line(_first_tokens(_head_lines(listed))[0])
        if len(toks) == 4 and _is_number(toks[2]) and _is_number(toks[3]):
            return resolve_listed(path, toks[1]) is not None
        return False

    def read(self, path, *, compute_rate: float = 1e9, compute_scale: float = 1.0,
             collectives: dict | None = None, syntax: str = "auto",
             elem_bytes: int | None = None, wait_ids: str = "auto", **unknown):
        """Read a TI trace into a :class:`~workloads.base.Workload`.

        Parameters
        ----------
        path : str or Path
            Trace file, description file or folder.
        compute_rate : float
            flop/s: ``compute <flops>`` lasts ``flops / compute_rate`` seconds.
        compute_scale : float
            Multiplies every compute and sleep duration.
        collectives : dict, optional
            Collective kind -> algorithm (see ``workloads.collectives``).
        syntax : {"auto", "tagged", "untagged"}
            How to read a 3-argument ``send``/``recv`` (``<peer> <tag> <count>`` in current
            SimGrid, ``<peer> <count> <dtype>`` in old traces). ``auto``: old if the file
            uses old action names (Isend, allReduce, ...) or the tag is not an integer.
        elem_bytes : int, optional
            Element size for counts without a datatype (default: 8 bytes after
            ``init <x>``, 1 byte after a bare ``init``, as SimGrid).
        wait_ids : {"auto", "rank", "pid"}
            How ``wait <src> <dst> <tag>`` names processes: ranks, or actor PIDs
            (rank + 1) as SimGrid 3.21-3.26 wrote them; ``auto`` detects it.
        """
        if unknown:
            raise CcmodInputError(f"unknown option(s) for format 'ti': {', '.join(unknown)}",
                                  hint="valid: syntax, elem_bytes, wait_ids")
        if wait_ids not in WAIT_IDS:
            raise CcmodInputError(f"bad wait_ids '{wait_ids}'", source="wait_ids",
                                  hint="valid: " + ", ".join(WAIT_IDS))
        if syntax not in _SYNTAXES:
            raise CcmodInputError(f"bad syntax '{syntax}'", source="syntax",
                                  hint="valid: " + ", ".join(_SYNTAXES))
        if elem_bytes is not None:
            try:
                elem_bytes = int(elem_bytes)
            except (TypeError, ValueError):
                elem_bytes = -1
            if elem_bytes <= 0:
                raise CcmodInputError("elem_bytes must be a positive integer",
                                      source="elem_bytes")
        opts = dict(compute_rate=compute_rate, compute_scale=compute_scale,
                    collectives=collectives, syntax=syntax, elem_bytes=elem_bytes,
                    wait_ids=wait_ids)
        path = Path(path)
        if path.is_dir():
            files = folder_files(path)
            if not files:
                raise CcmodInputError("folder holds no TI trace file", source=str(path),
                                      hint="TI lines look like '0 compute 1e6'")
            return self._read_files(files, len(files), "folder", str(path), opts)
        text = read_source(path)
        head, complete = _text_head(text)
        toks, ln = _first_tokens(head)
        if not toks and not complete:
            toks, ln = _first_tokens(as_text(text).splitlines())
        if len(toks) == 1 and not (toks[0].isdigit() and resolve_listed(path, toks[0]) is None):
            files = self._listed(path, as_text(text).splitlines())
            return self._read_files(files, len(files), "description", str(path), opts)
        if len(toks) == 4 and _is_number(toks[2]) and _is_number(toks[3]) \
                and not _is_action_line(toks):
            from ccmod.workloads.ti_multi import read_replay_multiple
            return read_replay_multiple(self, path, as_text(text).splitlines(), opts)
        siblings = _rank_siblings(path, head)
        if siblings:
            w = self._read_files(siblings, len(siblings), "per-rank siblings", str(path), opts)
            w.meta.setdefault("notes", []).append(
                f"{path.name} holds only rank {siblings.index(path)}'s actions: read with its "
                f"{len(siblings) - 1} sibling per-rank file(s) "
                f"({', '.join(f.name for f in siblings[:4])}{' ...' if len(siblings) > 4 else ''})")
            return w
        p = TIParser(None, **_parser_opts(opts))
        box = [text]
        del text, head       # _feed_text holds the only reference: see there
        _feed_text(p, box, str(path))
        w = p.finish(str(path))
        w.meta["layout"] = "one-file"
        return w

    def _listed(self, desc: Path, lines) -> list[Path]:
        files = []
        for ln, raw in enumerate(lines, 1):
            toks = raw.split("#", 1)[0].split()
            if not toks:
                continue
            if len(toks) != 1:
                raise CcmodInputError("a description file lists one trace file per line",
                                      source=str(desc), line=ln,
                                      hint="line i is the path of rank i's TI file")
            found = resolve_listed(desc, toks[0], strict=True)
            if found is None:
                raise CcmodInputError(f"listed trace file '{excerpt(toks[0], 80)}' not found",
                                      source=str(desc), line=ln,
                                      hint="paths are relative to the description file's "
                                           "folder (or a parent folder)")
            files.append(found)
        return files

    def _read_files(self, files, nranks, layout, what, opts):
        p = TIParser(nranks, **_parser_opts(opts))
        for f in files:
            _feed_text(p, [read_source(f)], str(f))
        w = p.finish(what)
        w.meta["layout"] = layout
        w.meta["source"] = what
        return w


def _feed_text(p: TIParser, box, fname: str) -> None:
    """Feed one file's contents (``box``: :func:`read_source`'s bytes or text, or a list
    holding them, taken from it) to the parser: vectorised when large (same records,
    errors).

    The vectorised path reads ASCII bytes; the contents are let go before the records are
    made (a caller holding them kept two copies of the trace under the parse's columns:
    ~19 bytes per record of the read's peak)."""
    text = box.pop() if isinstance(box, list) else box
    fast = ti_fast.fast_input(text) if ti_fast.usable(text) else None
    if fast is None:
        text = as_text(text)
        p.feed(text.splitlines(), fname, untagged=looks_untagged(text))
    else:
        del text
        data, untagged = fast
        ti_fast.feed(p, data, fname, untagged, ti_fast.LazyLines(data))


def _text_head(text: bytes | str, n: int = 2000) -> tuple[list[str], bool]:
    """The first ``n`` lines of ``text`` (:func:`read_source`'s; all when fewer) without
    splitting all of it, and whether they are all its lines."""
    size = 1 << 16
    while True:
        lines = as_text(text[:size]).splitlines()
        if size >= len(text):
            return lines, True
        if len(lines) > n:
            return lines[:n], False
        size *= 4


def _rank_siblings(path: Path, lines) -> list[Path] | None:
    """Per-rank files ``<stem><i><ext>`` next to ``path`` when ``path`` holds one rank only.

    SimGrid's per-rank files (``actions0.txt``, ``actions1.txt`` ...) are normally listed in a
    description file; given one of them alone, the set is read when the file's only rank
    equals the number in its name and siblings numbered 0..N-1 (each holding its own rank)
    exist. Otherwise None (the file is read on its own).
    """
    m = re.fullmatch(r"(.*?)(\d+)(\.[A-Za-z0-9.]+)?", path.name)
    if m is None:
        return None
    ranks = {toks[0] for toks in (ln.split("#", 1)[0].split() for ln in lines[:2000]) if toks}
    if ranks != {str(int(m.group(2)))}:
        return None
    stem, ext = m.group(1), m.group(3) or ""
    found = {}
    for f in path.parent.iterdir():
        mm = re.fullmatch(re.escape(stem) + r"(\d+)" + re.escape(ext), f.name)
        if mm and f.is_file():
            found[int(mm.group(1))] = f
    n = len(found)
    if n < 2 or sorted(found) != list(range(n)):
        return None
    for i, f in found.items():
        toks, _ = _first_tokens(_head_lines(f, 4096))
        if not toks or toks[0] != str(i):
            return None
    return [found[i] for i in range(n)]


def _parser_opts(opts: dict) -> dict:
    return {k: opts[k] for k in ("compute_rate", "compute_scale", "collectives", "syntax",
                                 "elem_bytes", "wait_ids")}
