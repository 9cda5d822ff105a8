"""The Spark test modules' shared session: `local[2]`, one per module (each module skips itself
when pyspark or Java is missing, before this fixture is ever asked for)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def spark():
    from extracteval.spark import get_session

    session = get_session("local[2]", shuffle_partitions=4)
    yield session
    session.stop()
