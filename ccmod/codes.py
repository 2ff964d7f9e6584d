"""Shared integer codes: workload op codes, rank states and evaluation signals.

They live in the core so that readers (``ccmod.workloads``), the engine and the sinks
(``ccmod.outputs``) agree on them without importing each other.

Op codes (``Workload.op``)
--------------------------
See :mod:`ccmod.workloads.base` for what each op's other columns mean.

Rank states (``rank_states.state``)
-----------------------------------
What a rank is doing during an interval: ``compute``, ``send``, ``recv``, ``wait``,
``barrier``, ``overhead`` (per-message CPU overheads) (index into :data:`STATE_NAMES`).
"""
from __future__ import annotations

(OP_COMPUTE, OP_SEND, OP_RECV, OP_ISEND, OP_IRECV, OP_WAIT, OP_WAITALL, OP_BARRIER,
 OP_AMREQUEST) = range(9)
OP_NAMES = ("compute", "send", "recv", "isend", "irecv", "wait", "waitall", "barrier",
            "amrequest")
#: op codes that post a message send / a message receive
SEND_OPS = (OP_SEND, OP_ISEND)
RECV_OPS = (OP_RECV, OP_IRECV)

STATE_COMPUTE, STATE_SEND, STATE_RECV, STATE_WAIT, STATE_BARRIER, STATE_OVERHEAD = range(6)
#: "overhead": per-message CPU overheads (o_send_s / o_recv_s) charged to a rank
STATE_NAMES = ("compute", "send", "recv", "wait", "barrier", "overhead")

#: evaluation signals, named after the article's otrace_sig (Listing Five)
SIGNALS = ("CONFIG", "GO_INIT", "NEWPROC", "NEWSCOM", "MSGSTART", "COMMCOST", "SYSCONT",
           "MSGCONT", "EVENTHORIZON", "UPPR_PROC", "UPPR_SCOM", "UPPR_END", "MSGEND", "GO_END")
