"""While extracteval reads and scores, the cycle collector runs less often; the caller's settings
are restored afterwards, also when the work fails."""

from __future__ import annotations

import gc

import pytest

import extracteval
from extracteval.core.collector import BULK_THRESHOLDS, bulk_work
from extracteval.errors import InputError


def test_bulk_work_raises_the_thresholds_and_restores_them() -> None:
    before = gc.get_threshold()
    with bulk_work():
        inside = gc.get_threshold()
    assert inside[0] >= BULK_THRESHOLDS[0] and inside[0] > before[0]
    assert gc.get_threshold() == before
    with pytest.raises(ValueError), bulk_work():
        raise ValueError("the work failed")
    assert gc.get_threshold() == before


def test_a_caller_with_higher_thresholds_keeps_them() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(10**7, 100, 1000)
        with bulk_work():
            assert gc.get_threshold() == (10**7, 100, 1000)
        assert gc.get_threshold() == (10**7, 100, 1000)
    finally:
        gc.set_threshold(*before)


def test_the_api_leaves_the_notebook_as_it_was() -> None:
    before = gc.get_threshold()
    extracteval.score("labels", [{"id": "a", "k": "x"}], {"m": [{"id": "a", "k": "x"}]})
    with pytest.raises(InputError):
        extracteval.score("labels", [{"id": "a", "k": "x"}], {"m": [{"id": "a", "k": "x"}, {"id": "a", "k": "y"}]})
    assert gc.get_threshold() == before


def test_collection_switched_off_stays_off_and_overlapping_blocks_restore_once() -> None:
    import threading

    before = gc.get_threshold()
    try:
        gc.set_threshold(0)
        with bulk_work():
            assert gc.get_threshold()[0] == 0
        gc.set_threshold(*before)
        inside, leave = threading.Event(), threading.Event()

        def other() -> None:
            with bulk_work():
                inside.set()
                leave.wait(5)

        t = threading.Thread(target=other)
        t.start()
        inside.wait(5)
        with bulk_work():
            pass
        assert gc.get_threshold()[0] >= BULK_THRESHOLDS[0]  # the other thread's block is still open
        leave.set()
        t.join(5)
        assert gc.get_threshold() == before
    finally:
        gc.set_threshold(*before)
