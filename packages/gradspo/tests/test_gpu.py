"""StepwiseTrainer on a CUDA device: rollouts and a training step stay on the GPU and agree with the CPU.

Skipped where no CUDA GPU is present. All randomness of a rollout comes from a CPU ``torch.Generator`` and is moved
to the device, so CPU and CUDA draw the same noise; what differs is float32 rounding of convolutions and attention
(cuDNN vs oneDNN, TF32 off), about 1e-6 per op, amplified over 3 DDIM steps through a random-init UNet: ``rtol=1e-3,
atol=1e-4`` bounds that and still catches a wrong device, dtype or schedule term.
"""

from __future__ import annotations

import math

import pytest
import torch
from nips25_gradspo import (
    ClassDenoiser,
    DigitReward,
    NoisyDigitClassifier,
    StepwiseTrainer,
    TrainerConfig,
    add_unet_lora,
    digits_scheduler,
    digits_unet,
)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.fixture(autouse=True)
def _no_tf32():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _accelerator(*, cpu: bool):
    """A fresh ``Accelerator`` (accelerate keeps one process-wide state; the CPU reference needs its own)."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    return Accelerator(cpu=cpu)


def _trainer(device: str, method: str = "gradspo", seed: int = 0) -> StepwiseTrainer:
    """The conftest's tiny digits trainer, with its reward model on ``device`` and the UNet prepared there."""
    torch.manual_seed(seed)
    unet = digits_unet()
    add_unet_lora(unet, r=2, alpha=2.0, target_modules=("to_q", "to_v", "conv1"))
    clf = NoisyDigitClassifier(width=8).to(device)
    cfg = TrainerConfig(
        method=method, num_inference_steps=3, num_candidates=2, divert_start_step=1, threshold=0.0, lr=1e-2
    )
    return StepwiseTrainer(
        ClassDenoiser(unet), digits_scheduler(), DigitReward(clf), config=cfg, latent_shape=(1, 8, 8),
        accelerator=_accelerator(cpu=device == "cpu"),
    )  # fmt: skip


def _cond(device: str, b: int = 3) -> dict[str, torch.Tensor]:
    return {"class_labels": torch.arange(b, device=device) % 10}


def test_rollout_on_cuda_equals_cpu_rollout():
    """Same seed, same generator: the CUDA trainer's DDIM samples equal the CPU trainer's."""
    want, _ = _trainer("cpu").sample(_cond("cpu"), generator=torch.Generator().manual_seed(5), record=False)
    tr = _trainer("cuda")
    assert all(p.is_cuda for p in tr.params.values())
    got, _ = tr.sample(_cond("cuda"), generator=torch.Generator().manual_seed(5), record=False)
    assert got.is_cuda and got.dtype == torch.float32
    torch.testing.assert_close(got.cpu(), want, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("method", ["gradspo", "spo", "dpo"])
def test_first_loss_is_log2_and_a_cuda_step_updates_only_lora(method):
    """Under ``Accelerator(cpu=False)``: pairs on cuda, loss log 2 at theta = ref, one step moves only LoRA."""
    tr = _trainer("cuda", method)
    assert tr.accelerator.device.type == "cuda"
    before = {n: p.detach().clone() for n, p in tr.denoiser.unet.named_parameters()}
    pairs, _ = tr.pairs(_cond("cuda"), generator=torch.Generator().manual_seed(0))
    assert pairs.x_t.is_cuda and pairs.noise_w.is_cuda
    loss, _ = tr.loss(pairs)
    assert loss.is_cuda and float(loss) == pytest.approx(math.log(2), abs=1e-5)
    stats = tr.step(_cond("cuda"), generator=torch.Generator().manual_seed(1))
    assert stats["n_pairs"] > 0 and math.isfinite(stats["loss"])
    changed = [n for n, p in tr.denoiser.unet.named_parameters() if not torch.equal(p, before[n])]
    assert changed and all("lora_" in n for n in changed)
    assert all(p.is_cuda for p in tr.denoiser.unet.parameters())
