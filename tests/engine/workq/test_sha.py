"""``_sha.Sha256``: SHA-256 whose running state moves between processes (a log's digest hashed share after share,
``engine/workq/fleet.py``). Its digest is hashlib's over the same bytes, however the bytes are cut and wherever
the state is handed on."""
from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples

try:
    from wqtool.engine.workq import _sha
except ImportError:      # optional: not built without libcrypto's headers
    _sha = None

needs_sha = pytest.mark.skipif(_sha is None, reason="wqtool.engine.workq._sha is not built (libcrypto headers)")


@needs_sha
@settings(max_examples=examples(500), deadline=None)
@given(st.binary(max_size=2000), st.lists(st.integers(0, 2000), max_size=6), st.data())
def test_state_handed_on_gives_hashlibs_digest(data, cuts, d):
    """The bytes cut anywhere into chunks; after any chunk the state goes into a new object (as into the next
    share's process): the digest is hashlib's of all the bytes, and the object that gave its state can go on."""
    cuts = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    h = _sha.Sha256()
    for a, b in zip(cuts, cuts[1:]):
        h.update(data[a:b])
        if d.draw(st.booleans()):
            state = h.state()
            assert len(state) == _sha.STATE_SIZE
            assert h.hexdigest() == hashlib.sha256(data[:b]).hexdigest()      # a digest does not end it
            h = _sha.Sha256(state)
    assert h.hexdigest() == hashlib.sha256(data).hexdigest()


@needs_sha
def test_large_buffers_and_memoryviews():
    data = bytes(range(256)) * 5000 + b"x" * 77
    h = _sha.Sha256()
    h.update(memoryview(data)[:700_001])
    h = _sha.Sha256(h.state())
    h.update(memoryview(data)[700_001:])
    assert h.hexdigest() == hashlib.sha256(data).hexdigest()


@needs_sha
@pytest.mark.parametrize("state", [b"", b"WQS1" + bytes(107), b"XXXX" + bytes(108),
                                   b"WQS1" + bytes(40) + (64).to_bytes(4, "big") + bytes(64)])
def test_a_state_of_another_kind_is_refused(state):
    with pytest.raises(ValueError, match="not a state"):
        _sha.Sha256(state)
