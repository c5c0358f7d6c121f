"""Gradient accumulation against autograd (GoRA, Sec. 3.1)."""

from __future__ import annotations

import pytest
import torch
from nips25_gora import accumulate_gradients
from torch import nn

TARGETS = ("query", "attention.output.dense")


def _autograd_mean(model, batches):
    params = {n[: -len(".weight")]: p for n, p in model.named_parameters() if n.endswith(("query.weight",))}
    params |= {
        n[: -len(".weight")]: p for n, p in model.named_parameters() if n.endswith("attention.output.dense.weight")
    }
    loss = sum(model(**b).loss for b in batches) / len(batches)
    return dict(zip(params, torch.autograd.grad(loss, list(params.values()))))


def test_equals_autograd_gradient_of_mean_loss(make_bert, make_batches):
    """G_i = (1/N) sum_s dL_s/dW_i equals autograd's gradient of the mean loss; flags and mode are restored."""
    model, batches = make_bert(), make_batches(4)
    model.train()
    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    got = accumulate_gradients(model, batches, target_modules=TARGETS, n_steps=4)
    assert model.training  # restored
    model.eval()
    expected = _autograd_mean(model, batches)
    assert set(got) == set(expected) and len(got) == 4
    for name in expected:
        torch.testing.assert_close(got[name], expected[name], rtol=1e-5, atol=1e-7)
    assert {n: p.requires_grad for n, p in model.named_parameters()} == flags
    assert all(p.grad is None for p in model.parameters())


def test_same_under_a_one_process_accelerator(make_bert, make_batches):
    from accelerate import Accelerator

    model, batches = make_bert(), make_batches(3)
    plain = accumulate_gradients(model, batches, target_modules=TARGETS, n_steps=3)
    accelerated = accumulate_gradients(model, batches, target_modules=TARGETS, n_steps=3, accelerator=Accelerator())
    for name in plain:
        torch.testing.assert_close(accelerated[name], plain[name], rtol=1e-6, atol=1e-8)


def test_uses_only_the_first_n_steps_batches(make_bert, make_batches):
    model, batches = make_bert(), make_batches(5)
    first_two = accumulate_gradients(model, batches[:2], target_modules=TARGETS, n_steps=2)
    capped = accumulate_gradients(model, batches, target_modules=TARGETS, n_steps=2)
    for name in first_two:
        torch.testing.assert_close(capped[name], first_two[name])


def test_early_stop_stops_on_a_repeated_batch(make_bert, make_batches):
    """Repeating one batch leaves the running mean unchanged, so the importance change is 0 at step 3."""
    model, batch = make_bert(), make_batches(1)[0]
    seen = []

    def loss_fn(m, b):
        seen.append(1)
        return m(**b).loss

    accumulate_gradients(model, [batch] * 10, target_modules=TARGETS, n_steps=10, loss_fn=loss_fn, early_stop_tol=0.1)
    assert len(seen) == 3


def test_rejects_bad_input(make_bert, make_batches):
    model, batches = make_bert(), make_batches(2)
    with pytest.raises(ValueError, match="target_modules"):
        accumulate_gradients(model, batches, target_modules=("nope",))
    with pytest.raises(ValueError, match="batches"):
        accumulate_gradients(model, [], target_modules=TARGETS)
    with pytest.raises(ValueError, match="n_steps"):
        accumulate_gradients(model, batches, target_modules=TARGETS, n_steps=0)
    with pytest.raises(ValueError, match="not finite"):
        accumulate_gradients(
            model, batches, target_modules=TARGETS, loss_fn=lambda m, b: m(**b).loss * float("nan"), n_steps=2
        )
    with pytest.raises(TypeError, match="nn.Linear"):
        accumulate_gradients(model, batches, target_modules=("attention.output",))


def test_gpt2_conv1d_is_rejected():
    """GPT-2's Conv1D stores W transposed; it is rejected rather than mis-read."""
    from transformers.pytorch_utils import Conv1D

    net = nn.Sequential(Conv1D(4, 3))
    with pytest.raises(TypeError, match="Conv1D"):
        accumulate_gradients(net, [torch.ones(1, 3)], target_modules=("0",), loss_fn=lambda m, x: m(x).sum())


def test_loss_without_grad_names_loss_fn():
    net = nn.Sequential(nn.Linear(3, 2))
    with pytest.raises(ValueError, match="loss_fn"):
        accumulate_gradients(net, [torch.ones(1, 3)], target_modules=("0",), loss_fn=lambda m, x: m(x).sum().detach())


def test_offload_to_cpu_gives_the_same_mean(make_bert, make_batches):
    """Accumulators on the weight's device (default) or in host memory (offload_to_cpu) hold the same mean."""
    model, batches = make_bert(), make_batches(3)
    on_device = accumulate_gradients(model, batches, target_modules=TARGETS, n_steps=3)
    offloaded = accumulate_gradients(model, batches, target_modules=TARGETS, n_steps=3, offload_to_cpu=True)
    for name in on_device:
        assert offloaded[name].device.type == "cpu" and offloaded[name].dtype == torch.float32
        assert on_device[name].device == model.get_submodule(name).weight.device
        torch.testing.assert_close(offloaded[name], on_device[name], rtol=0, atol=0)
    with pytest.raises(TypeError, match="offload_to_cpu"):
        accumulate_gradients(model, batches, target_modules=TARGETS, offload_to_cpu="yes")


def test_a_non_finite_accumulated_gradient_is_rejected():
    """A finite loss whose gradient is NaN (d sqrt|w| at w = 0) is caught by the min/max check of the mean."""
    net = nn.Sequential(nn.Linear(3, 2))
    nn.init.zeros_(net[0].weight)
    with pytest.raises(ValueError, match="NaN or inf"):
        accumulate_gradients(net, [torch.ones(1, 3)], target_modules=("0",), n_steps=1,
                             loss_fn=lambda m, x: m[0].weight.abs().sqrt().sum() + m(x).sum())  # fmt: skip


def test_bfloat16_gradients_are_summed_in_float32():
    """bf16 weights: the float32 accumulator equals the float32 sum of the bf16 gradients (promoted in place)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 4)).to(torch.bfloat16)
    xs = [torch.randn(2, 8, dtype=torch.bfloat16) for _ in range(3)]
    got = accumulate_gradients(net, xs, target_modules=("0",), n_steps=3, loss_fn=lambda m, x: m(x).float().sum())
    expected = sum(torch.autograd.grad(net(x).float().sum(), net[0].weight)[0].float() for x in xs) / 3
    assert got["0"].dtype == torch.float32
    torch.testing.assert_close(got["0"], expected, rtol=0, atol=0)


def test_peak_tensor_memory_is_the_accumulators_plus_one_gradient():
    """No second copy of the gradients: the mean is the accumulators divided in place (0.2.2 held both: 2x).

    Peak of torch's CPU allocator over the call (profiler, exact at operator granularity): 4 targets 256x256, so
    the accumulators are 1 MiB and one gradient 0.25 MiB; activations of a batch of 4 are negligible.
    """
    from torch.profiler import ProfilerActivity, profile

    net = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.Tanh()) for _ in range(4)])
    targets, xs = [f"{i}.0" for i in range(4)], [torch.randn(4, 256) for _ in range(2)]
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = accumulate_gradients(net, xs, target_modules=targets, n_steps=2, loss_fn=lambda m, x: m(x).sum())
    live = peak = 0
    for e in sorted((e for e in prof.events() if e.self_cpu_memory_usage), key=lambda e: e.time_range.start):
        live += e.self_cpu_memory_usage
        peak = max(peak, live)
    accumulators = 4 * 256 * 256 * 4
    assert accumulators <= peak <= accumulators + 256 * 256 * 4 + 2**16
    assert sum(g.numel() for g in out.values()) * 4 == accumulators
