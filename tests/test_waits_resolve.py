"""The static wait-to-request mapping (:func:`ccmod.kernel.waits.resolve_waits`) against
per-rank dicts of request -> 2 m + side, the mapping's definition."""
import numpy as np

from ccmod.codes import OP_IRECV, OP_ISEND, OP_WAIT, OP_WAITALL
from ccmod.kernel.waits import resolve_waits


def _by_dicts(rank_ptr, op, req, msg):
    """(bad_pc, wait_msg, wait_side, wa_ptr, wa_msg, wa_side) kept in a dict per rank."""
    n = len(op)
    wait_msg, wait_side = np.full(n, -1, np.int64), np.zeros(n, np.int64)
    wa_ptr, wa_msg, wa_side = [0], [], []
    for r in range(len(rank_ptr) - 1):
        out = {}
        for pc in range(rank_ptr[r], rank_ptr[r + 1]):
            o, q, m = op[pc], int(req[pc]), int(msg[pc])
            if o in (OP_ISEND, OP_IRECV):
                out[q] = 2 * m + (o == OP_IRECV)
            elif o == OP_WAIT:
                if q not in out:
                    return pc, None
                v = out.pop(q)
                wait_msg[pc], wait_side[pc] = v >> 1, v & 1
            elif o == OP_WAITALL:
                wait_msg[pc] = len(wa_ptr) - 1
                wa_msg += [v >> 1 for v in out.values()]
                wa_side += [v & 1 for v in out.values()]
                out.clear()
                wa_ptr.append(len(wa_msg))
    return -1, (wait_msg, wait_side, wa_ptr, wa_msg, wa_side)


def _program(rng, ids):
    """A random program of a few ranks: posts (some under an id still outstanding), waits
    (mostly on outstanding ids), waitalls and other records; request ids from ``ids``."""
    nr, n = int(rng.integers(1, 6)), int(rng.integers(0, 60))
    rank_ptr = np.concatenate([[0], np.cumsum(rng.multinomial(n, np.ones(nr) / nr))])
    op = rng.choice([0, OP_ISEND, OP_IRECV, OP_WAIT, OP_WAITALL], p=[.2, .3, .3, .15, .05],
                    size=n).astype(np.int8)
    req = np.full(n, -1, np.int64)
    for r in range(nr):
        live = set()
        for pc in range(rank_ptr[r], rank_ptr[r + 1]):
            if op[pc] in (OP_ISEND, OP_IRECV):
                req[pc] = ids[int(rng.integers(0, len(ids)))]
                live.add(int(req[pc]))
            elif op[pc] == OP_WAIT:
                pick = sorted(live) if live and rng.random() < 0.97 else ids
                req[pc] = pick[int(rng.integers(0, len(pick)))]
                live.discard(int(req[pc]))
            elif op[pc] == OP_WAITALL:
                live.clear()
    return rank_ptr.astype(np.int64), op, req, rng.integers(0, 1000, n).astype(np.int32)


def test_waits_resolve_as_per_rank_dicts():
    """Small non-negative ids (the dense keys) and large or negative ones (the sorted
    keys); programs whose waits all resolve and ones with a wait on nothing outstanding."""
    rng = np.random.default_rng(11)
    kinds = {"ok": 0, "bad": 0}
    for trial in range(600):
        ids = [[0, 1, 2, 3], [-2, -1, 0, 1], [-10**12, 0, 7 * 10**12, 2**40]][trial % 3]
        rank_ptr, op, req, msg = _program(rng, ids)
        got = resolve_waits(rank_ptr, op, req, msg)
        bad, want = _by_dicts(rank_ptr, op, req, msg)
        assert got[0] == bad, trial
        if bad >= 0:
            kinds["bad"] += 1
            continue
        kinds["ok"] += 1
        if not np.isin(op, (OP_WAIT, OP_WAITALL)).any():
            continue                      # placeholders: nothing reads them
        wait_msg, wait_side, wa_ptr, wa_msg, wa_side = want
        assert (got[1] == wait_msg).all() and (got[2] == wait_side).all(), trial
        assert list(got[3]) == wa_ptr, trial
        k = wa_ptr[-1]
        assert list(got[4][:k]) == wa_msg and list(got[5][:k]) == wa_side, trial
    assert min(kinds.values()) > 100, kinds
