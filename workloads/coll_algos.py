"""Point-to-point building blocks of the collective algorithms (used by
``workloads.collectives``).

Every function appends one rank's ops through an :class:`Emit`; ``blocks[i]`` is the
number of bytes belonging to rank ``i`` (or to relative rank ``i`` for rooted trees).
Exchanges are irecv + isend + two waits, so they cannot deadlock under rendezvous semantics.
"""
from __future__ import annotations

import numpy as np

from ccmod.workloads.base import WorkloadBuilder


def pof2_of(p: int) -> int:
    """Largest power of two <= p."""
    return 1 << (p.bit_length() - 1)


class Emit:
    """Append one rank's ops with the collective's tag, line and private request ids."""

    def __init__(self, b: WorkloadBuilder, rank: int, tag: int, req0: int, step: int,
                 line: int, file_id: int):
        self.b, self.rank, self.tag = b, rank, tag
        self.req0, self.step, self.n = req0, step, 0
        self.kw = {"line": line, "file_id": file_id}

    def _req(self) -> int:
        r = self.req0 + self.step * self.n
        self.n += 1
        return r

    def send(self, dst, nbytes):
        self.b.send(self.rank, int(dst), int(nbytes), tag=self.tag, **self.kw)

    def recv(self, src, nbytes):
        self.b.recv(self.rank, int(src), int(nbytes), tag=self.tag, **self.kw)

    def isend(self, dst, nbytes) -> int:
        r = self._req()
        self.b.isend(self.rank, int(dst), int(nbytes), r, tag=self.tag, **self.kw)
        return r

    def irecv(self, src, nbytes) -> int:
        r = self._req()
        self.b.irecv(self.rank, int(src), r, int(nbytes), tag=self.tag, **self.kw)
        return r

    def wait(self, req):
        self.b.wait(self.rank, req, **self.kw)

    def exchange(self, dst, send_nbytes, src, recv_nbytes):
        """irecv + isend + two waits: cannot deadlock under rendezvous semantics."""
        rr = self.irecv(src, recv_nbytes)
        rs = self.isend(dst, send_nbytes)
        self.wait(rr)
        self.wait(rs)


def dissemination(e: Emit, r: int, p: int):
    k = 1
    while k < p:
        e.exchange((r + k) % p, 0, (r - k) % p, 0)
        k <<= 1


def binomial_down(e: Emit, r: int, p: int, root: int, sub_bytes):
    """Binomial tree from ``root``: recv from parent, then send to children (largest first).

    ``sub_bytes(v, m)`` = bytes for the subtree of relative rank ``v`` spanning ``m`` ranks.
    """
    v = (r - root) % p
    mask = 1
    while mask < p:
        if v & mask:
            e.recv((v - mask + root) % p, sub_bytes(v, mask))
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if v + mask < p:
            e.send((v + mask + root) % p, sub_bytes(v + mask, mask))
        mask >>= 1


def binomial_up(e: Emit, r: int, p: int, root: int, sub_bytes):
    """Binomial tree towards ``root``: recv from children (smallest first), send to parent."""
    v = (r - root) % p
    mask = 1
    while mask < p:
        if v & mask == 0:
            src = v | mask
            if src < p:
                e.recv((src + root) % p, sub_bytes(src, mask))
        else:
            e.send(((v & ~mask) + root) % p, sub_bytes(v, mask))
            break
        mask <<= 1


def rel_subtree(blocks: np.ndarray, root: int, p: int):
    """sub_bytes for trees carrying per-rank blocks (relative rank v owns block (v+root)%p)."""
    rel = np.roll(np.asarray(blocks, dtype=np.int64), -root)
    cum = np.concatenate(([0], np.cumsum(rel)))
    return lambda v, m: int(cum[min(v + m, p)] - cum[v])


def ring_allgather(e: Emit, r: int, p: int, blocks, rel0: int = 0):
    """P-1 steps: send block (v-k) to the right, recv block (v-k-1) from the left.

    Ranks are taken relative to ``rel0`` (block index = relative rank).
    """
    v = (r - rel0) % p
    right, left = (r + 1) % p, (r - 1) % p
    for k in range(p - 1):
        e.exchange(right, blocks[(v - k) % p], left, blocks[(v - k - 1) % p])


def neighbor_exchange_allgather(e: Emit, r: int, p: int, blocks):
    """Open MPI's neighbour exchange (even P): P/2 steps with alternating neighbours.

    Step 0 exchanges one's own block with ``neighbor[0]``; each later step exchanges the
    pair of blocks ``(2j, 2j+1)`` received at the previous step with the other neighbour,
    so each rank receives (P-1) blocks in P/2 messages instead of P-1 (ring).
    """
    even = r % 2 == 0
    nb = ((r + 1) % p, (r - 1) % p) if even else ((r - 1) % p, (r + 1) % p)
    frm = [r, r] if even else [nb[0], nb[0]]
    off = (2, -2) if even else (-2, 2)
    e.exchange(nb[0], blocks[r], nb[0], blocks[nb[0]])
    send_from = r if even else frm[0]
    for i in range(1, p // 2):
        k = i % 2
        frm[k] = (frm[k] + off[k]) % p
        e.exchange(nb[k], blocks[send_from] + blocks[(send_from + 1) % p],
                   nb[k], blocks[frm[k]] + blocks[(frm[k] + 1) % p])
        send_from = frm[k]


def fold(r: int, p: int):
    """Standard fold of non-power-of-two P: (pof2, rem, newrank or -1)."""
    pof2 = pof2_of(p)
    rem = p - pof2
    if r < 2 * rem:
        return pof2, rem, (-1 if r % 2 == 0 else r // 2)
    return pof2, rem, r - rem


def unfold(g: int, rem: int) -> int:
    return 2 * g + 1 if g < rem else g + rem


def rd_allgather(e: Emit, r: int, p: int, blocks):
    """Recursive doubling allgather with folding of the extra ranks."""
    pof2, rem, g = fold(r, p)
    total = int(np.sum(blocks))
    if r < 2 * rem and g < 0:
        e.send(r + 1, blocks[r])
        e.recv(r + 1, total)
        return
    if r < 2 * rem:
        e.recv(r - 1, blocks[r - 1])
    gsize = np.array([blocks[2 * i] + blocks[2 * i + 1] if i < rem else blocks[i + rem]
                      for i in range(pof2)], dtype=np.int64)
    cum = np.concatenate(([0], np.cumsum(gsize)))
    mask = 1
    while mask < pof2:
        partner = g ^ mask
        mine, theirs = g & ~(mask - 1), partner & ~(mask - 1)
        e.exchange(unfold(partner, rem), cum[mine + mask] - cum[mine],
                   unfold(partner, rem), cum[theirs + mask] - cum[theirs])
        mask <<= 1
    if r < 2 * rem:
        e.send(r - 1, total)


def bruck_allgather(e: Emit, r: int, p: int, blocks):
    k = 1
    while k < p:
        cnt = min(k, p - k)
        send_n = sum(int(blocks[(r + j) % p]) for j in range(cnt))
        src = (r + k) % p
        recv_n = sum(int(blocks[(src + j) % p]) for j in range(cnt))
        e.exchange((r - k) % p, send_n, src, recv_n)
        k <<= 1


def split(n: int, parts: int) -> np.ndarray:
    """Balanced split of n bytes in ``parts`` segments (first n % parts get one more)."""
    s = np.full(parts, n // parts, dtype=np.int64)
    s[: n % parts] += 1
    return s


def allreduce_rd(e: Emit, r: int, p: int, n: int, halving: bool):
    """Recursive doubling (full vectors) or Rabenseifner (recursive-halving reduce-scatter
    + recursive-doubling allgather), extra ranks folded in and out."""
    pof2, rem, g = fold(r, p)
    if g < 0:
        e.send(r + 1, n)
        e.recv(r + 1, n)
        return
    if r < 2 * rem:
        e.recv(r - 1, n)
    if not halving:
        mask = 1
        while mask < pof2:
            d = unfold(g ^ mask, rem)
            e.exchange(d, n, d, n)
            mask <<= 1
    else:
        cum = np.concatenate(([0], np.cumsum(split(n, pof2))))
        lo, hi, steps, mask = 0, pof2, [], 1
        while mask < pof2:  # keep the half of the window on my side of bit `mask`
            d = unfold(g ^ mask, rem)
            mid = (lo + hi) // 2
            keep, give = ((lo, mid), (mid, hi)) if g & mask == 0 else ((mid, hi), (lo, mid))
            e.exchange(d, cum[give[1]] - cum[give[0]], d, cum[keep[1]] - cum[keep[0]])
            steps.append((d, keep, give))
            lo, hi = keep
            mask <<= 1
        for d, keep, give in reversed(steps):  # allgather: the same steps in reverse
            e.exchange(d, cum[keep[1]] - cum[keep[0]], d, cum[give[1]] - cum[give[0]])
    if r < 2 * rem:
        e.send(r - 1, n)


def ring_reduce_scatter(e: Emit, r: int, p: int, blocks):
    right, left = (r + 1) % p, (r - 1) % p
    for k in range(p - 1):
        e.exchange(right, blocks[(r - k - 1) % p], left, blocks[(r - k - 2) % p])


def pairwise(e: Emit, r: int, p: int, send_of, recv_of, shift: bool = False):
    """P-1 exchanges; XOR partners for power-of-two P (MPICH), else (or with ``shift``, as
    Open MPI always does) send to r+i and receive from r-i at step i."""
    pow2 = p == pof2_of(p) and not shift
    for i in range(1, p):
        if pow2:
            dst = src = r ^ i
        else:
            dst, src = (r + i) % p, (r - i) % p
        e.exchange(dst, send_of(dst), src, recv_of(src))


def linear_exchange(e: Emit, r: int, p: int, send_of, recv_of):
    reqs = [e.irecv((r + i) % p, recv_of((r + i) % p)) for i in range(1, p)]
    reqs += [e.isend((r - i) % p, send_of((r - i) % p)) for i in range(1, p)]
    for q in reqs:
        e.wait(q)


def linear_root(e: Emit, r: int, p: int, root: int, blocks, to_root: bool):
    """Root exchanges with every rank directly (irecvs/isends + waits at the root)."""
    if r != root:
        (e.send if to_root else e.recv)(root, blocks[r])
        return
    others = [(root + i) % p for i in range(1, p)]
    if to_root:
        reqs = [e.irecv(s, blocks[s]) for s in others]
    else:
        reqs = [e.isend(d, blocks[d]) for d in others]
    for q in reqs:
        e.wait(q)
