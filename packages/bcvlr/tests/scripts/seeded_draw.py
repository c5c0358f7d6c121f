"""A stand-in for ``run_seed`` that spawned worker processes can import (tests/test_reproduce.py)."""

from __future__ import annotations


def seeded_draw(profile: int, seed: int, *, show_progress: bool = True) -> dict[str, object]:
    """A stand-in for ``run_seed``: seeds itself as ``run_seed`` does, trains one step, reports its threads."""
    import torch

    from nips25_shared import seed_everything

    seed_everything(seed)
    net = torch.nn.Linear(profile, 1)
    net(torch.randn(4, profile)).square().mean().backward()
    return {"weights": net.weight.detach().tolist(), "grad": net.weight.grad.tolist(),
            "threads": torch.get_num_threads(), "progress": show_progress}  # fmt: skip
