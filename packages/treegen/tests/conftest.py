"""Test-session settings: torch on one intra-op thread; the ``distributed`` marker.

On the shared 2-core CI machine two torch threads were about 10x slower per training step than one (spin-waiting
on an oversubscribed CPU: 0.25 vs 0.024 s per step of the small test model, measured); the tests check the same
things either way.
"""

import torch

torch.set_num_threads(1)


def pytest_configure(config):
    config.addinivalue_line("markers", "distributed: runs a script under accelerate launch with 2 CPU processes")
