"""The run directory's Parquet tables (:mod:`ccmod.outputs.parquet`): every column's name,
its type as written, and whether it holds few distinct values.

Few-valued columns (ranks, links, sizes, states) are dictionary-encoded; the others
(times, ids, slowdowns: mostly distinct) are not. By default the Parquet writer builds a
dictionary for every column, finds it too large for the mostly distinct ones and writes
them plain after all: a messages table took ~4x as long to write (0.25 -> 0.06 s CPU per
131k messages) and came out ~20 % larger.

Both writers (the in-memory sink and the streamed one, :mod:`ccmod.outputs.parquet_stream`)
take the encoding from here, and tests/test_parquet_tables.py checks that every table they
write has exactly these columns, in this order, with these types: a new column cannot be
written without saying here whether it is few-valued.
"""
from __future__ import annotations

#: a column with few distinct values (dictionary-encoded) or mostly distinct ones (plain)
FEW, MANY = True, False

#: table (its file's stem) -> ((column, type as written, few-valued), ...) in file order.
#: Types: ``int32``, ``int64``, ``double``, ``string`` and ``category`` (a dictionary of
#: strings). Of the tables of one row per rank or link, ``peak_active`` (a link's most
#: messages at once: a few small counts) is dictionary-encoded: 3683 mesh links 865 B
#: smaller, 4096 links of 12 values 27% smaller, 16 to 128 links within 16 B. Written
#: plain, as dictionaries made them larger: ``node`` (one rank per node is the usual
#: mapping: +618 B for 512 ranks, +27 B for 16; smaller only with many ranks per node),
#: ``capacity_Bps`` (mostly one value, which zstd packs as well plain: +27 B a file) and
#: ``messages`` (a link's message count: -413 B on the 512-rank mesh, but +2.2 kB for 2048
#: links of distinct counts, +144 B for a star's 128)
TABLES = {
    "messages": (
        ("msg_id", "int64", MANY), ("src", "int32", FEW), ("dst", "int32", FEW),
        ("tag", "int32", FEW), ("nbytes", "int64", FEW), ("t_post_s", "double", MANY),
        ("t_post_send_s", "double", MANY), ("t_post_recv_s", "double", MANY),
        ("t_start_s", "double", MANY), ("t_end_s", "double", MANY),
        ("quiet_s", "double", FEW), ("slowdown", "double", MANY),
        ("bottleneck", "int64", FEW), ("bottleneck_name", "string", FEW),
        ("hops", "int32", FEW)),
    "rank_states": (
        ("rank", "int32", FEW), ("state", "category", FEW), ("t_start_s", "double", MANY),
        ("t_end_s", "double", MANY)),
    "link_load": (
        ("resource", "int32", FEW), ("name", "category", FEW), ("t_start_s", "double", MANY),
        ("t_end_s", "double", MANY), ("active", "int32", FEW),
        ("utilisation", "double", MANY), ("background", "double", FEW)),
    "ranks": (
        ("rank", "int64", FEW), ("node", "int64", MANY), ("finish_s", "double", MANY),
        ("compute_s", "double", MANY), ("send_s", "double", MANY),
        ("recv_s", "double", MANY), ("wait_s", "double", MANY),
        ("barrier_s", "double", MANY), ("overhead_s", "double", MANY),
        ("handler_s", "double", MANY)),
    "links": (
        ("resource", "int64", FEW), ("name", "string", FEW), ("messages", "int64", MANY),
        ("bytes", "int64", MANY), ("peak_active", "int64", FEW),
        ("mean_active", "double", MANY), ("busy_s", "double", MANY),
        ("background", "double", FEW), ("capacity_Bps", "double", MANY),
        ("utilisation_mean", "double", MANY), ("utilisation_peak", "double", MANY)),
    "resources": (
        ("resource", "int64", FEW), ("name", "string", FEW),
        ("capacity_Bps", "double", MANY), ("background", "double", FEW)),
}

#: table -> its dictionary-encoded (few-valued) columns
DICTIONARY_COLUMNS = {table: frozenset(c for c, _, few in cols if few)
                      for table, cols in TABLES.items()}


def columns(table: str) -> list:
    """The column names of ``table``, in file order."""
    return [c for c, _, _ in TABLES[table]]


def dictionary_columns(table: str, names) -> list:
    """The columns of ``names`` (a table's columns as written) to dictionary-encode
    (``use_dictionary``)."""
    few = DICTIONARY_COLUMNS[table]
    return [c for c in names if c in few]


_NUMPY = {"int32": "int32", "int64": "int64", "double": "float64", "string": "object"}


def empty_columns(table: str) -> dict:
    """``table``'s columns without rows, as numpy arrays of the types the in-memory tables
    hold (strings as objects)."""
    import numpy as np
    return {c: np.zeros(0, _NUMPY[t]) for c, t, _ in TABLES[table]}
