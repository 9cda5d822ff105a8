"""Shared fixtures. Reference data lives outside the repository in ../shared/data; tests that
need it skip with a clear reason when it is absent (a user's clone)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXPERIMENTS = REPO / "experiments"


def _shared_data() -> Path:
    env = os.environ.get("EXTRACTEVAL_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


SHARED_DATA = _shared_data()


@pytest.fixture
def shared_data() -> Path:
    """../shared/data (or $EXTRACTEVAL_SHARED_DATA); skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"reference data not found at {SHARED_DATA} (set EXTRACTEVAL_SHARED_DATA to run the reference tests)")
    return SHARED_DATA
