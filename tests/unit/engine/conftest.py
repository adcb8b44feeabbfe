from __future__ import annotations

import pytest

from .harness import CoordinatorBuilder


@pytest.fixture
def builder() -> CoordinatorBuilder:
    return CoordinatorBuilder()
