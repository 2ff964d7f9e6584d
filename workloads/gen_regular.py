"""Regular statistical workloads: all-to-all, uniform random traffic, ring, halo, wavefront.

Every generator is a plain function ``(params..., seed=0) -> Workload``; compute durations
are in seconds; all randomness goes through ``numpy.random.default_rng(seed)``.
Point-to-point tags are >= 0 (collective tags of ``workloads.collectives`` are negative).
"""
from __future__ import annotations

import itertools

import numpy as np

from ccmod.workloads import collectives
from ccmod.workloads.base import Workload, WorkloadBuilder
from ccmod.workloads.gen_common import Reqs, check_nonneg, check_ranks, draw, finish, need, pick_other
from ccmod.workloads.registry import GENERATORS


@GENERATORS.register(
    "alltoall",
    "repeated MPI_Alltoall of nbytes per block (collective decomposition)")
def alltoall(nranks: int = 16, iterations: int = 10, nbytes: int = 65536,
             compute_s: float = 0.0, algorithm: str = "auto", seed: int = 0) -> Workload:
    """``iterations`` MPI_Alltoall calls of ``nbytes`` per destination block.

    Parameters
    ----------
    nranks, iterations : int
    nbytes : int
        Bytes sent to each other rank per call.
    compute_s : float
        Seconds of local work before each call.
    algorithm : str
        ``auto`` (MPICH-like choice by size) or a name of
        ``workloads.collectives.ALGORITHMS["alltoall"]``.
    seed : int
        Unused (the pattern is deterministic); kept for a uniform interface.
    """
    g = "alltoall"
    check_ranks(g, nranks)
    check_nonneg(g, iterations=iterations, nbytes=nbytes, compute_s=compute_s)
    need(algorithm == "auto" or algorithm in collectives.ALGORITHMS["alltoall"], g,
         f"unknown alltoall algorithm '{algorithm}'",
         "valid: auto, " + ", ".join(collectives.ALGORITHMS["alltoall"]))
    b = WorkloadBuilder(nranks)
    for r in range(nranks):
        for it in range(iterations):
            if compute_s > 0:
                b.compute(r, compute_s)
            collectives.expand(b, r, nranks, "alltoall", it, nbytes=nbytes, algorithm=algorithm)
    w = finish(b, g, dict(nranks=nranks, iterations=iterations, nbytes=nbytes,
                          compute_s=compute_s, algorithm=algorithm), seed,
               algorithm=algorithm if algorithm != "auto" else
               collectives.default_algorithm("alltoall", nranks, nbytes))
    # a pure-collective program: map the collective tags back to the call index (>= 0)
    neg = w.tag < 0
    w.tag[neg] = collectives.COLL_TAG_BASE - w.tag[neg]
    return w


@GENERATORS.register(
    "uniform",
    "uniform random traffic: each rank sends to random other ranks in rounds")
def uniform(nranks: int = 16, iterations: int = 100, nbytes: int = 4096, fanout: int = 1,
            compute_s: float = 1e-5, dist: str = "exponential", seed: int = 0) -> Workload:
    """Uniform random traffic in rounds.

    In every round each rank computes (mean ``compute_s``, distribution ``dist``) and
    sends ``fanout`` messages of ``nbytes`` to uniformly chosen other ranks; it posts an
    irecv for each message addressed to it in that round (sources in increasing order),
    then its isends, then waits for all of them. Tag = round number.
    """
    g = "uniform"
    check_ranks(g, nranks, 2)
    check_nonneg(g, iterations=iterations, nbytes=nbytes, fanout=fanout, compute_s=compute_s)
    rng = np.random.default_rng(seed)
    b = WorkloadBuilder(nranks)
    req = Reqs(nranks)
    src = np.repeat(np.arange(nranks), fanout)
    for it in range(iterations):
        work = draw(rng, dist, compute_s, nranks, g)
        dst = pick_other(rng, src, nranks)
        order = np.lexsort((src, dst))  # incoming messages of each rank by source
        incoming = [[] for _ in range(nranks)]
        for i in order:
            incoming[dst[i]].append(int(src[i]))
        for r in range(nranks):
            if work[r] > 0:
                b.compute(r, work[r])
            reqs = [_irecv(b, req, r, s, nbytes, it) for s in incoming[r]]
            reqs += [_isend(b, req, r, int(d), nbytes, it) for d in dst[r * fanout:(r + 1) * fanout]]
            for q in reqs:
                b.wait(r, q)
    return finish(b, g, dict(nranks=nranks, iterations=iterations, nbytes=nbytes, fanout=fanout,
                             compute_s=compute_s, dist=dist), seed)


@GENERATORS.register(
    "ring",
    "ring: every rank shifts nbytes to its right neighbour (or a token circulates)")
def ring(nranks: int = 8, iterations: int = 10, nbytes: int = 1 << 20, compute_s: float = 0.0,
         mode: str = "shift", seed: int = 0) -> Workload:
    """Ring communication.

    ``mode=shift``: every iteration all ranks compute then send ``nbytes`` to the right
    neighbour and receive from the left one at the same time (irecv + isend + waits).
    ``mode=token``: one token of ``nbytes`` travels ``iterations`` times around the ring
    (rank 0 starts; each rank receives, computes, forwards). ``seed`` is unused.
    """
    g = "ring"
    check_ranks(g, nranks, 2)
    check_nonneg(g, iterations=iterations, nbytes=nbytes, compute_s=compute_s)
    need(mode in ("shift", "token"), g, f"unknown mode '{mode}'", "valid: shift, token")
    b = WorkloadBuilder(nranks)
    req = Reqs(nranks)
    for r in range(nranks):
        right, left = (r + 1) % nranks, (r - 1) % nranks
        for it in range(iterations):
            if mode == "shift":
                if compute_s > 0:
                    b.compute(r, compute_s)
                q1 = _irecv(b, req, r, left, nbytes, it)
                q2 = _isend(b, req, r, right, nbytes, it)
                b.wait(r, q1)
                b.wait(r, q2)
            else:
                if r != 0 or it > 0:
                    b.recv(r, left, nbytes, tag=it if r != 0 else it - 1)
                if compute_s > 0:
                    b.compute(r, compute_s)
                b.send(r, right, nbytes, tag=it)
        if mode == "token" and r == 0 and iterations > 0:
            b.recv(r, left, nbytes, tag=iterations - 1)
    return finish(b, g, dict(nranks=nranks, iterations=iterations, nbytes=nbytes,
                             compute_s=compute_s, mode=mode), seed)


def _irecv(b, req, r, src, nbytes, tag):
    q = req(r)
    b.irecv(r, int(src), q, int(nbytes), tag=int(tag))
    return q


def _isend(b, req, r, dst, nbytes, tag):
    q = req(r)
    b.isend(r, int(dst), int(nbytes), q, tag=int(tag))
    return q


def _halo(g: str, dims: tuple[int, ...], iterations: int, nbytes: int, compute_s: float,
          periodic: bool, dist: str, seed: int, params: dict) -> Workload:
    """Nearest-neighbour exchange on a Cartesian grid of ranks (x fastest)."""
    for k, d in zip("xyz", dims):
        need(int(d) >= 1, g, f"p{k}={d} must be >= 1")
    check_nonneg(g, iterations=iterations, nbytes=nbytes, compute_s=compute_s)
    nranks = int(np.prod([int(d) for d in dims], dtype=object))
    check_ranks(g, nranks)
    rng = np.random.default_rng(seed)
    b = WorkloadBuilder(nranks)
    req = Reqs(nranks)
    strides = np.cumprod((1,) + tuple(dims[:-1]))
    # direction index t = 2*axis + (0: towards -1, 1: towards +1); the tag is the direction
    # the message travels in, so a receiver expects tag t from its neighbour on side t^1
    nbr = np.full((nranks, 2 * len(dims)), -1, dtype=np.int64)
    for r in range(nranks):
        coord = [(r // strides[a]) % dims[a] for a in range(len(dims))]
        for a in range(len(dims)):
            for side, step in ((0, -1), (1, 1)):
                c = coord[a] + step
                if periodic:
                    c %= dims[a]
                elif not 0 <= c < dims[a]:
                    continue
                if c == coord[a]:
                    continue  # a dimension of size 1 has no neighbour
                nbr[r, 2 * a + side] = r + (c - coord[a]) * strides[a]
    for it in range(iterations):
        work = draw(rng, dist, compute_s, nranks, g)
        for r in range(nranks):
            if work[r] > 0:
                b.compute(r, work[r])
            reqs = []
            for t in range(nbr.shape[1]):
                if nbr[r, t ^ 1] >= 0:
                    reqs.append(_irecv(b, req, r, nbr[r, t ^ 1], nbytes, t))
            for t in range(nbr.shape[1]):
                if nbr[r, t] >= 0:
                    reqs.append(_isend(b, req, r, nbr[r, t], nbytes, t))
            for q in reqs:
                b.wait(r, q)
    return finish(b, g, params, seed)


@GENERATORS.register("halo2d", "2D nearest-neighbour halo exchange on a px x py grid")
def halo2d(px: int = 4, py: int = 4, iterations: int = 10, nbytes: int = 8192,
           compute_s: float = 1e-4, periodic: bool = True, dist: str = "deterministic",
           seed: int = 0) -> Workload:
    """2D 5-point halo exchange on a px x py grid (rank = x + px*y), ``nbytes`` per face.

    Each iteration: compute (mean ``compute_s``, distribution ``dist``), irecv from every
    neighbour, isend to every neighbour, wait for each request.
    """
    return _halo("halo2d", (px, py), iterations, nbytes, compute_s, periodic, dist, seed,
                 dict(px=px, py=py, iterations=iterations, nbytes=nbytes, compute_s=compute_s,
                      periodic=periodic, dist=dist))


@GENERATORS.register("halo3d", "3D nearest-neighbour halo exchange on a px x py x pz grid")
def halo3d(px: int = 4, py: int = 4, pz: int = 4, iterations: int = 10, nbytes: int = 8192,
           compute_s: float = 1e-4, periodic: bool = True, dist: str = "deterministic",
           seed: int = 0) -> Workload:
    """3D 7-point halo exchange on a px x py x pz grid (rank = x + px*(y + py*z))."""
    return _halo("halo3d", (px, py, pz), iterations, nbytes, compute_s, periodic, dist, seed,
                 dict(px=px, py=py, pz=pz, iterations=iterations, nbytes=nbytes,
                      compute_s=compute_s, periodic=periodic, dist=dist))


#: Sweep3D-like octant order: (dx, dy, dz) with x slowest, z fastest
OCTANTS = tuple(itertools.product((-1, 1), (-1, 1), (-1, 1)))


@GENERATORS.register(
    "wavefront",
    "Sweep3D-like pipelined wavefront: px x py ranks, 8 octants, k-blocks")
def wavefront(px: int = 4, py: int = 4, kblocks: int = 10, angle_blocks: int = 1,
              octants: int = 8, iterations: int = 1, nbytes_x: int = 4096, nbytes_y: int = 4096,
              block_compute_s: float = 1e-5, dist: str = "deterministic",
              seed: int = 0) -> Workload:
    """Sweep3D-like pipelined wavefront sweeps on a px x py grid of ranks.

    For each iteration, each of ``octants`` (<= 8) sweep directions, each angle block and
    each of ``kblocks`` k-planes blocks, a rank: receives from its upstream x neighbour
    (``nbytes_x``) and upstream y neighbour (``nbytes_y``) if they exist, computes one block
    (mean ``block_compute_s``), then sends to its downstream x and y neighbours, with
    blocking send/recv as Sweep3D does. Tag = octant index.
    """
    g = "wavefront"
    need(px >= 1 and py >= 1, g, f"px={px}, py={py} must be >= 1")
    check_ranks(g, int(px) * int(py))
    need(1 <= octants <= 8, g, f"octants={octants} must be in 1..8")
    check_nonneg(g, kblocks=kblocks, angle_blocks=angle_blocks, iterations=iterations,
                 nbytes_x=nbytes_x, nbytes_y=nbytes_y, block_compute_s=block_compute_s)
    n = px * py
    rng = np.random.default_rng(seed)
    nblocks = octants * angle_blocks * kblocks
    b = WorkloadBuilder(n)
    for it in range(iterations):
        work = draw(rng, dist, block_compute_s, (n, nblocks), g)
        for r in range(n):
            x, y = r % px, r // px
            blk = 0
            for o in range(octants):
                dx, dy, _ = OCTANTS[o]
                ux, dnx = x - dx, x + dx
                uy, dny = y - dy, y + dy
                for _ in range(angle_blocks * kblocks):
                    if 0 <= ux < px:
                        b.recv(r, ux + px * y, nbytes_x, tag=o)
                    if 0 <= uy < py:
                        b.recv(r, x + px * uy, nbytes_y, tag=o)
                    if work[r, blk] > 0:
                        b.compute(r, work[r, blk])
                    blk += 1
                    if 0 <= dnx < px:
                        b.send(r, dnx + px * y, nbytes_x, tag=o)
                    if 0 <= dny < py:
                        b.send(r, x + px * dny, nbytes_y, tag=o)
    return finish(b, g, dict(px=px, py=py, kblocks=kblocks, angle_blocks=angle_blocks,
                             octants=octants, iterations=iterations, nbytes_x=nbytes_x,
                             nbytes_y=nbytes_y, block_compute_s=block_compute_s, dist=dist), seed)
