"""Fixtures shared by the integration tests."""
from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def site() -> Iterator[dict]:
    """The lab site, up and converged once per session (lab_site.py); test_lab_site.py and test_lab_slices.py use it."""
    from ansible_collections.metalserve.sglang.tests.integration import lab_site  # noqa: PLC0415

    yield from lab_site.bring_up()
