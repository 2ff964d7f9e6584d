"""Integer codes of the kernel: timer kinds, rank run states, signal codes, scalar slots.

Op codes and rank-state codes are the project's (re-exported here so the loop reads one
module); signal codes index :data:`ccmod.codes.SIGNALS` (the article's otrace_sig).
"""
from __future__ import annotations

from ccmod.codes import (OP_AMREQUEST, OP_BARRIER, OP_COMPUTE, OP_IRECV,  # noqa: F401
                         OP_ISEND, OP_NAMES, OP_RECV, OP_SEND, OP_WAIT, OP_WAITALL, SIGNALS,
                         STATE_BARRIER, STATE_COMPUTE, STATE_NAMES, STATE_OVERHEAD, STATE_RECV,
                         STATE_SEND, STATE_WAIT)

#: rank states kept per rank (columns of ``state_s``)
NSTATES = len(STATE_NAMES)
#: timer kinds (one live timer per slot: rank compute/overhead, rank resume, message, handler)
EV_COMPUTE, EV_MSG_END, EV_LAT_END, EV_HANDLER_END, EV_RESUME, EV_START = range(6)
#: run states of a rank besides the blocked states (>= 0, the STATE_* codes)
RS_RUNNABLE, RS_COMPUTING, RS_FINISHED = -1, -2, -3
#: slots of the kernel's integer scalars (K_NRET: slots in MsgSt.ret, streaming)
(K_SEQ, K_EVENTS, K_RECORDS, K_NBAR, K_RHEAD, K_RTAIL, K_BG, K_STARTED,
 K_STARVED, K_INIT, K_NRET) = range(11)
#: number of integer scalar slots
NKS = 11

SG = {name: i for i, name in enumerate(SIGNALS)}
SG_GO_INIT = SG["GO_INIT"]
SG_NEWPROC = SG["NEWPROC"]
SG_NEWSCOM = SG["NEWSCOM"]
SG_MSGSTART = SG["MSGSTART"]
SG_COMMCOST = SG["COMMCOST"]
SG_EVENTHORIZON = SG["EVENTHORIZON"]
SG_UPPR_PROC = SG["UPPR_PROC"]
SG_UPPR_END = SG["UPPR_END"]
SG_MSGEND = SG["MSGEND"]
SG_GO_END = SG["GO_END"]
