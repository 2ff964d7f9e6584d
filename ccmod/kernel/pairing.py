"""Static send/recv pairing by counting over a dense channel table (compiled).

MPI's non-overtaking rule with no wildcards pairs the n-th send on a channel (src, dst,
tag) with the n-th receive on it (:mod:`ccmod.compile`). When every channel has a place
in a small table (ranks x ranks x the tags' range), counting per channel pairs them in
two passes over the sends and receives, where sorting both sides by channel took most of
a run's matching time (1M records: two 16-bit radix sorts, the sorted keys compared, a
scatter). The pairs are the sort's, one for one.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ccmod.jit import jit_enabled, numba_startup

numba_startup()     # before any compile or cache load (ccmod.jit)

#: at most this many channels in the table (or 4 per message, when more): its counters
#: are zeroed and scanned once per run
DENSE_CHANNELS = 1 << 20
#: fewer messages are sorted: loading the compiled pass from numba's cache (~0.01 s) costs
#: more than sorting them (~0.1 us per message)
DENSE_MIN_MESSAGES = 1 << 16


@njit(cache=True, _nrt=False)
def _pair_counts(s_src, s_dst, s_tag, r_src, r_dst, r_tag, nranks, tag_lo, ntags, cnt_s,
                 cnt_r, r_slot, recv_of):
    """Fill ``recv_of[k]``: the receive (index into the receives) paired with send ``k``.

    Channel ``c = (src * nranks + dst) * ntags + tag - tag_lo``; ``cnt_s``, ``cnt_r`` are
    zeroed counters, one per channel. Returns False when some channel has more sends than
    receives or the reverse (``recv_of`` then means nothing). Sends and receives are each
    in record order, so within a channel the slots follow program order on both sides.
    """
    for k in range(s_src.shape[0]):
        cnt_s[(s_src[k] * nranks + s_dst[k]) * ntags + (s_tag[k] - tag_lo)] += 1
    for j in range(r_src.shape[0]):
        cnt_r[(r_src[j] * nranks + r_dst[j]) * ntags + (r_tag[j] - tag_lo)] += 1
    end = 0
    for c in range(cnt_s.shape[0]):
        if cnt_s[c] != cnt_r[c]:
            return False
        cnt_r[c] = end               # the channel's first slot
        end += cnt_s[c]
    # the receives into their channels' slots, in order: cnt_r[c] ends past channel c
    for j in range(r_src.shape[0]):
        c = (r_src[j] * nranks + r_dst[j]) * ntags + (r_tag[j] - tag_lo)
        r_slot[cnt_r[c]] = j
        cnt_r[c] += 1
    # the sends backwards from each channel's end: the last send takes the last slot
    for k in range(s_src.shape[0] - 1, -1, -1):
        c = (s_src[k] * nranks + s_dst[k]) * ntags + (s_tag[k] - tag_lo)
        cnt_r[c] -= 1
        recv_of[k] = r_slot[cnt_r[c]]
    return True


def pair_dense(nranks, s_src, s_dst, s_tag, r_src, r_dst, r_tag):
    """The receive paired with each send (an index into the receives, int64), False when
    the channels do not balance, or None when the caller sorts: the table would be too
    large, there are fewer than :data:`DENSE_MIN_MESSAGES` messages, or numba's JIT is
    off (the caller's sort is the faster plain Python).

    ``s_*`` the sends' (source rank, destination rank, tag), ``r_*`` the receives', each in
    record order.
    """
    M = len(s_src)
    if not jit_enabled() or M != len(r_src) or M < DENSE_MIN_MESSAGES:
        return None
    if M == 0:
        return np.zeros(0, np.int64)
    tag_lo = min(int(s_tag.min()), int(r_tag.min()))
    tag_hi = max(int(s_tag.max()), int(r_tag.max()))
    ntags = tag_hi - tag_lo + 1
    nch = nranks * nranks * ntags
    if nch > max(DENSE_CHANNELS, 4 * M) or tag_lo < -(1 << 31) or tag_hi >= 1 << 31:
        return None
    i32 = lambda a: np.asarray(a).astype(np.int32, copy=False)  # noqa: E731 - one signature
    cnt_s = np.zeros(nch, np.int64)
    cnt_r = np.zeros(nch, np.int64)
    r_slot = np.empty(M, np.int64)
    recv_of = np.empty(M, np.int64)
    ok = _pair_counts(i32(s_src), i32(s_dst), i32(s_tag), i32(r_src), i32(r_dst), i32(r_tag),
                      np.int64(nranks), np.int64(tag_lo), np.int64(ntags), cnt_s, cnt_r,
                      r_slot, recv_of)
    return recv_of if ok else False
