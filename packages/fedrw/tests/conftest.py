"""Test configuration of nips25-fedrw: the ``distributed`` marker (2-process `accelerate launch` runs)."""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "distributed: runs a script under accelerate launch with 2 CPU processes")
