"""How a worker joins its job: a handshake that proves both sides hold the job's key.

Four messages, in HELLO (worker -> PS) and HELLO_ACK (PS -> worker) packets; the first payload
byte names the step:

1. HELLO     step 1, the worker's nonce Nw, padded (so no answer is larger than its request)
2. HELLO_ACK step 2, the PS's nonce Np and MAC("challenge", Nw, Np): the PS holds the key
3. HELLO     step 3, Nw, Np, the worker's configuration fingerprint and MAC("proof", ...)
4. HELLO_ACK step 4, the PS's fingerprint and MAC("welcome", ...)

Every MAC is HMAC-SHA256 under the job's key over the job, the rank and both nonces, so a
proof recorded earlier fails against a fresh Np. Np is a cookie, not state: a MAC under a
secret of this PS process over the sender's address, rank, Nw and a time bucket. So the PS
keeps nothing per unauthenticated sender, and a proof sent from another address than the one
that got the challenge fails. Only step 3 with a valid MAC binds a rank, and nothing about
the job (fingerprint, configuration) goes to a sender before it. The PS remembers the proofs
it accepted while their cookie is valid: one sent again is answered (a lost welcome) but marked
not fresh, so a replay from the address that got the challenge changes nothing either.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import struct
import time
from dataclasses import dataclass

from hosts.errors import PacketError
from hosts.transport.counters import Counters

NONCE = 16
TAG = 32
_CHALLENGE_TAG = 16
COOKIE_SECONDS = 30.0
STEP_HELLO, STEP_CHALLENGE, STEP_PROOF, STEP_WELCOME = 1, 2, 3, 4
HELLO_LEN = 96                                  # step 1 padded: >= every answer to it
CHALLENGE_LEN = 1 + NONCE + _CHALLENGE_TAG
PROOF_LEN = 1 + 2 * NONCE + 4 + TAG
WELCOME_LEN = 1 + 4 + TAG
_FP = struct.Struct("!I")
_IDS = struct.Struct("!HH")
_DOMAIN = b"gradlane-join-v1|"


def mac(key: bytes, label: bytes, job: int, rank: int, nw: bytes, np_: bytes,
        fingerprint: int = 0) -> bytes:
    """HMAC-SHA256 of one handshake step (label) over job, rank, both nonces and fingerprint."""
    msg = _DOMAIN + label + _IDS.pack(job, rank) + nw + np_ + _FP.pack(fingerprint)
    return hmac.digest(key, msg, hashlib.sha256)


def _step(payload: bytes, length: int, step: int) -> bool:
    return len(payload) == length and payload[0] == step


@dataclass(frozen=True)
class Answer:
    """What the PS does with one HELLO: `reply` (a HELLO_ACK payload, or None: stay silent);
    `proven`: the sender proved the key for the rank; `fresh`: with a proof not accepted
    before; `fingerprint`: the one it presented."""

    reply: bytes | None
    proven: bool = False
    fresh: bool = False
    fingerprint: int | None = None


class JoinServer:
    """The PS's side: answers HELLOs of ranks 0..workers-1; keeps no per-sender state."""

    def __init__(self, key: bytes, job: int, workers: int, fingerprint: int,
                 counters: Counters) -> None:
        self._key = key
        self._cookie_secret = secrets.token_bytes(32)
        self.job = job
        self.workers = workers
        self.fingerprint = fingerprint
        self.counters = counters
        self._accepted: dict[tuple[int, bytes, bytes], int] = {}   # proof -> bucket accepted

    def _cookie(self, addr: tuple[str, int], rank: int, nw: bytes, bucket: int) -> bytes:
        msg = f"{addr[0]}|{addr[1]}|{rank}|{bucket}|".encode() + nw
        return hmac.digest(self._cookie_secret, msg, hashlib.sha256)[:NONCE]

    def _drop(self, reason: str) -> Answer:
        self.counters[f"drop_hello_{reason}"] += 1
        return Answer(None)

    def on_hello(self, rank: int, addr: tuple[str, int], payload: bytes,
                 now: float | None = None) -> Answer:
        """Step 1 gets a challenge, a valid step 3 a welcome; anything else silence. ``now``:
        the driver's time (default the host's monotonic clock), which dates the cookies."""
        if not 0 <= rank < self.workers:
            return self._drop("rank")
        bucket = int((time.monotonic() if now is None else now) // COOKIE_SECONDS)
        if _step(payload, HELLO_LEN, STEP_HELLO):
            nw = payload[1:1 + NONCE]
            np_ = self._cookie(addr, rank, nw, bucket)
            tag = mac(self._key, b"challenge", self.job, rank, nw, np_)[:_CHALLENGE_TAG]
            return Answer(bytes([STEP_CHALLENGE]) + np_ + tag)
        if not _step(payload, PROOF_LEN, STEP_PROOF):
            return self._drop("corrupt")
        nw, np_ = payload[1:1 + NONCE], payload[1 + NONCE:1 + 2 * NONCE]
        (theirs,) = _FP.unpack_from(payload, 1 + 2 * NONCE)
        if not any(hmac.compare_digest(np_, self._cookie(addr, rank, nw, b))
                   for b in (bucket, bucket - 1)):
            return self._drop("stale")
        if not hmac.compare_digest(payload[-TAG:], mac(self._key, b"proof", self.job, rank,
                                                       nw, np_, theirs)):
            return self._drop("bad_mac")
        tag = mac(self._key, b"welcome", self.job, rank, nw, np_, self.fingerprint)
        return Answer(bytes([STEP_WELCOME]) + _FP.pack(self.fingerprint) + tag, proven=True,
                      fresh=self._first_use((rank, nw, np_), bucket), fingerprint=theirs)

    def _first_use(self, proof: tuple[int, bytes, bytes], bucket: int) -> bool:
        """Remember a valid proof until its cookie expires; False if it was seen already."""
        for old in [p for p, b in self._accepted.items() if b < bucket - 1]:
            del self._accepted[old]
        if proof in self._accepted:
            return False
        self._accepted[proof] = bucket
        return True


class JoinClient:
    """The worker's side: `next_hello()` is what to send now; feed every HELLO_ACK to
    `on_ack()`; `ps_fingerprint` is set once the PS proved the key in its welcome."""

    def __init__(self, key: bytes, job: int, rank: int, fingerprint: int) -> None:
        self._key = key
        self.job = job
        self.rank = rank
        self.fingerprint = fingerprint
        self._nw = secrets.token_bytes(NONCE)
        self._np: bytes | None = None
        self.ps_fingerprint: int | None = None
        self.bad_answers = 0      # HELLO_ACKs that did not prove the key (another job's PS?)

    @property
    def joined(self) -> bool:
        return self.ps_fingerprint is not None

    def next_hello(self) -> bytes:
        """Step 1 until a valid challenge came, then step 3."""
        if self._np is None:
            return (bytes([STEP_HELLO]) + self._nw).ljust(HELLO_LEN, b"\0")
        tag = mac(self._key, b"proof", self.job, self.rank, self._nw, self._np, self.fingerprint)
        return bytes([STEP_PROOF]) + self._nw + self._np + _FP.pack(self.fingerprint) + tag

    def on_ack(self, payload: bytes) -> bytes | None:
        """Take one HELLO_ACK; the proof to send at once after a valid challenge, else None.
        PacketError('corrupt') for one that is malformed or does not carry a valid MAC."""
        if _step(payload, CHALLENGE_LEN, STEP_CHALLENGE):
            np_ = payload[1:1 + NONCE]
            want = mac(self._key, b"challenge", self.job, self.rank, self._nw, np_)
            if hmac.compare_digest(payload[1 + NONCE:], want[:_CHALLENGE_TAG]):
                self._np = np_
                return self.next_hello()
        elif _step(payload, WELCOME_LEN, STEP_WELCOME) and self._np is not None:
            (theirs,) = _FP.unpack_from(payload, 1)
            want = mac(self._key, b"welcome", self.job, self.rank, self._nw, self._np, theirs)
            if hmac.compare_digest(payload[-TAG:], want):
                self.ps_fingerprint = theirs
                return None
        self.bad_answers += 1
        raise PacketError("corrupt", "HELLO_ACK without a valid MAC of the job's key")
