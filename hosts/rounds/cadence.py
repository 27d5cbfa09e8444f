"""The round protocol's timing constants (both drivers read them from here)."""
from __future__ import annotations

# A worker waits for a silent PS twice as long as the PS waits for a silent worker: the PS
# decides who takes part, so a worker joins again only once the PS surely went on without it
# (joining again costs it the rounds until it has the model back).
PS_PATIENCE = 2.0
PULL_REQ_EVERY_PROBES = 5   # a worker that got no pull asks again every this many probe intervals
HELLO_EVERY = 0.1           # s between a joining worker's HELLOs
EPOCH_COPIES = 2            # a KIND_EPOCH goes out twice: a worker that misses both waits, then asks
EPOCHS_KEPT = 8             # rounds of announced epochs a worker remembers
LAST_PULL_GRACE = 2.0       # s the PS waits for every worker's STOP of the final pull
QUORUM_POLL = 0.2           # s between the PS's checks of --min-workers while the job is short


def ps_patience(peer_timeout: float) -> float:
    """How long a worker waits for a silent PS (see PS_PATIENCE)."""
    return PS_PATIENCE * peer_timeout
