"""GoRA on a CUDA device: gradients, adapter and training stay on the GPU and agree with the CPU.

Skipped where no CUDA GPU is present. Tolerances: float32 reductions run in a different order on the GPU (cuBLAS vs
MKL), so a tiny BERT's gradients and logits agree to about 1e-6 relative; ``rtol=1e-4`` leaves room for that while
still catching a wrong device, dtype or a dropped term. TF32 is switched off so matmuls stay float32.
"""

from __future__ import annotations

import pytest
import torch
from nips25_gora import GoraConfig, accumulate_gradients, apply_gora
from nips25_gora.training import TrainConfig, make_loader, mean_loss, train
from peft.tuners.lora import LoraLayer

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

TARGETS = ("query", "attention.output.dense")
CONFIG = GoraConfig(target_modules=("query", "key", "value"), r_ref=4, r_min=1, r_max=16, n_steps=3, xi=0.5)


@pytest.fixture(autouse=True)
def _no_tf32():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _to(batches, device):
    return [{k: v.to(device) for k, v in b.items()} for b in batches]


def test_gradients_on_cuda_equal_cpu_gradients(make_bert, make_batches):
    """The mean gradient G_i of a CUDA model equals the CPU one (returned as float32 CPU tensors, by contract)."""
    batches = make_batches(3)
    cpu = accumulate_gradients(make_bert(), batches, target_modules=TARGETS, n_steps=3)
    gpu = accumulate_gradients(make_bert().cuda(), _to(batches, "cuda"), target_modules=TARGETS, n_steps=3)
    assert set(gpu) == set(cpu)
    for name in cpu:
        assert gpu[name].device.type == "cpu" and gpu[name].dtype == torch.float32
        torch.testing.assert_close(gpu[name], cpu[name], rtol=1e-4, atol=1e-6)


def test_apply_gora_on_cuda_matches_cpu_adapter(make_bert, make_batches):
    """Same seed, same ranks; every LoRA weight lives on cuda; the adapted logits equal the CPU adapter's."""
    x = make_batches(1, seed=7)[0]["input_ids"]
    torch.manual_seed(3)
    cpu_model = apply_gora(make_bert(), make_batches(), CONFIG)
    torch.manual_seed(3)
    gpu_model = apply_gora(make_bert().cuda(), _to(make_batches(), "cuda"), CONFIG)
    assert gpu_model.gora_init.ranks == cpu_model.gora_init.ranks
    for module in gpu_model.modules():
        if isinstance(module, LoraLayer):
            assert module.lora_A["default"].weight.is_cuda and module.lora_B["default"].weight.is_cuda
    with torch.no_grad():
        want = cpu_model(input_ids=x).logits
        got = gpu_model(input_ids=x.cuda()).logits
    assert got.is_cuda
    torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)


def test_train_under_a_cuda_accelerator_lowers_the_loss(make_bert, make_batches):
    """``train`` with ``Accelerator(cpu=False)`` runs on cuda and lowers the loss on its fixed training batches."""
    from accelerate import Accelerator

    batches = make_batches(4, seed=1, batch=8)
    data = {k: torch.cat([b[k] for b in batches]) for k in ("input_ids", "labels")}
    model = apply_gora(make_bert(), batches, CONFIG)
    accelerator = Accelerator(cpu=False)
    assert accelerator.device.type == "cuda"
    model = model.to(accelerator.device)
    before = mean_loss(model, batches)
    log = train(model, make_loader(data, batch_size=8, seed=0), TrainConfig(steps=30, lr=5e-3), accelerator=accelerator)
    assert next(model.parameters()).is_cuda and len(log.losses) == 30
    assert mean_loss(model, batches) < before
