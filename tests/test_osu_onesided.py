"""OSU one-sided latency output is detected as OSU, not misread as CSV (issue 12)."""
from __future__ import annotations

import pytest

from ccmod.errors import CcmodInputError
from ccmod.netsys.pingpong import detect_format, read_measurements

GET = ("# OSU One Sided MPI_Get latency Test v5.6.3\n# Window creation: MPI_Win_allocate\n"
       "# Synchronization: MPI_Win_flush\n# Size          Latency (us)\n"
       "1                       2.10\n8                       2.13\n1024                    3.50\n")


def test_one_sided_latency_is_osu(tmp_path):
    assert detect_format(GET) == "osu"
    p = tmp_path / "get.out"
    p.write_text(GET)
    m = read_measurements(p)
    assert m.kind == "latency" and "osu_latency" in m.format
    assert list(m.nbytes) == [1, 8, 1024]
    assert m.one_way_s[0] == pytest.approx(2.10e-6)


def test_one_sided_collective_like_titles_still_refused(tmp_path):
    p = tmp_path / "acc.out"
    p.write_text("# OSU One Sided MPI_Accumulate latency Test v5.6.3\n# Size  Latency (us)\n"
                 "1  2.0\n")
    with pytest.raises(CcmodInputError, match="not a point-to-point"):
        read_measurements(p)
