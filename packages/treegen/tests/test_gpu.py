"""TreeGen on a CUDA device: logits and BFN loss equal the CPU's; sampling and training run on cuda.

Skipped where no CUDA GPU is present. The flow draws come from a CPU ``torch.Generator`` and are moved to the
device, so CPU and CUDA see the same inputs; float32 attention and layer norms round differently on the GPU
(~1e-6 relative per op, one layer deep, TF32 off), so ``rtol=1e-4, atol=1e-5``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_treegen.ginkgo import simulate
from nips25_treegen.hierarchy import is_binary_tree
from nips25_treegen.model import TrainConfig, TreeGen, TreeGenConfig, jet_features, row_layout, train

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

SMALL = TreeGenConfig(n_max=7, d_model=16, n_heads=2, n_layers=1)


@pytest.fixture(autouse=True)
def _no_tf32():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _batch(n=6, b=4, seed=0):
    jets = simulate(b, n_leaves=(n, n), seed=seed)
    return np.stack([j.leaves for j in jets]), np.stack([j.parents for j in jets])


def _pair():
    torch.manual_seed(0)
    cpu = TreeGen(SMALL).eval()
    gpu = TreeGen(SMALL)
    gpu.load_state_dict(cpu.state_dict())
    return cpu, gpu.cuda().eval()


def test_logits_and_loss_on_cuda_equal_cpu():
    """Same weights, same flow draws: the masked logits and the BFN loss agree on cuda and CPU."""
    cpu, gpu = _pair()
    leaves, parents = _batch()
    lf, pf = jet_features(leaves)
    mask, _ = row_layout(6)
    theta = torch.softmax(
        torch.randn(4, 10, 5, generator=torch.Generator().manual_seed(1)).masked_fill(~mask, -torch.inf), -1
    )
    t = torch.rand(4, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        want = cpu(lf, pf, theta, t)
        got = gpu(lf.cuda(), pf.cuda(), theta.cuda(), t.cuda())
        assert got.is_cuda
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)
        want_loss = cpu.loss(leaves, parents, generator=torch.Generator().manual_seed(0))
        got_loss = gpu.loss(leaves, parents, generator=torch.Generator().manual_seed(0))
    assert got_loss.is_cuda
    torch.testing.assert_close(got_loss.cpu(), want_loss, rtol=1e-4, atol=1e-5)


def test_sampling_on_cuda_gives_well_formed_trees():
    """The BFN sampler runs with the model on cuda; edges point to higher slots, the root has no parent."""
    _, gpu = _pair()
    leaves, _ = _batch(n=5, b=2)
    out = gpu.sample(leaves, n_samples=6, n_steps=3, seed=1)
    assert isinstance(out, np.ndarray) and out.shape == (2, 6, 9)
    for p in out.reshape(-1, 9):
        assert p[-1] == -1 and np.all(p[:-1] > np.minimum(np.arange(8), 4))
        assert is_binary_tree(p, 5)  # default decoder: p_O restricted to physically valid trees


def test_train_under_a_cuda_accelerator_lowers_the_loss():
    """``train`` with ``Accelerator(cpu=False)`` moves the model to cuda and lowers a fixed-draw evaluation loss."""
    from accelerate import Accelerator

    torch.manual_seed(0)
    model = TreeGen(SMALL)
    jets = simulate(64, n_leaves=(5, 5), seed=2)
    leaves, parents = np.stack([j.leaves for j in jets]), np.stack([j.parents for j in jets])

    def eval_loss() -> float:
        with torch.no_grad():
            return float(model.loss(leaves, parents, generator=torch.Generator().manual_seed(9)))

    before = eval_loss()
    accelerator = Accelerator(cpu=False)
    assert accelerator.device.type == "cuda"
    losses = train(model, jets, TrainConfig(steps=60, batch_size=32, lr=5e-3, seed=0), accelerator=accelerator)
    assert next(model.parameters()).is_cuda and len(losses) == 60
    assert eval_loss() < before
