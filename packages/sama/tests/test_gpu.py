"""The SAMA aggregator and region inputs on a CUDA device, against the same seeded computation on the CPU.

Skipped where no CUDA GPU is present. Tolerances: float32 attention and layer norms reduce in a different order on
the GPU, about 1e-6 relative per op through a few Q-Former layers, so ``rtol=1e-4, atol=1e-5`` (TF32 off). bfloat16
keeps 8 mantissa bits (2^-8 ~ 4e-3 per op); through 2+2 Q-Former layers the relative error of the output stays
within a few percent, so the bf16 check allows 5e-2 in relative Frobenius norm.
"""

from __future__ import annotations

import pytest
import torch
from nips25_sama import SpatioTemporalAggregator
from nips25_sama.region import prepare_region_inputs

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

IDS = torch.tensor(
    [
        [101, 30528, 30523, 30524, 30529, 2693, 102],
        [101, 2054, 2003, 102, 0, 0, 0],
        [101, 30528, 30523, 30524, 30529, 1029, 102],
    ]
)


@pytest.fixture(autouse=True)
def _no_tf32():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _inputs(seed: int = 2):
    """Frames ``(T=5, N=16, C=12)``, 3 prompts (two with a region), region masks over the frames."""
    gen = torch.Generator().manual_seed(seed)
    frames = torch.randn(5, 16, 12, generator=gen)
    masks = torch.zeros(3, 5, 16, 16, dtype=torch.bool)
    masks[:, :, 4:12, 2:10] = True
    return frames, masks


def _aggregator(tiny_config):
    torch.manual_seed(2)
    return SpatioTemporalAggregator(tiny_config(prompt_chunk=2)).eval()


def test_region_inputs_on_cuda_equal_cpu(tiny_config):
    """Box pooling and the bilinear shape mask give the same numbers on cuda and stay there."""
    frames, masks = _inputs()
    want_v, want_s = prepare_region_inputs(frames, masks, frame_index=1, mask_size=8)
    got_v, got_s = prepare_region_inputs(frames.cuda(), masks.cuda(), frame_index=1, mask_size=8)
    assert got_v.is_cuda and got_s.is_cuda
    torch.testing.assert_close(got_v.cpu(), want_v, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got_s.cpu(), want_s, rtol=0, atol=0)


def test_aggregator_on_cuda_equals_cpu(tiny_config):
    """The full aggregator (spatial + temporal Q-Formers, region encoder, injection) agrees on cuda and CPU."""
    frames, masks = _inputs()
    rv, rs = prepare_region_inputs(frames, masks, frame_index=0, mask_size=8)
    rv, rs = rv[:, None], rs[:, None]  # one region per prompt: (P, 1, C), (P, 1, S, S)
    ids, mask = IDS, (IDS != 0).long()
    agg = _aggregator(tiny_config)
    with torch.no_grad():
        want = agg(frames, ids, mask, region_visual=rv, region_shape=rs)
        agg.cuda()
        assert all(p.is_cuda for p in agg.parameters()) and all(b.is_cuda for b in agg.buffers())
        got = agg(frames.cuda(), ids.cuda(), mask.cuda(), region_visual=rv.cuda(), region_shape=rs.cuda())
    assert got.is_cuda and got.shape == (3, 5, 12)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)


def test_aggregator_in_bfloat16_on_cuda_is_close_to_float32(tiny_config):
    """A bf16 aggregator on cuda takes bf16 inputs, returns bf16, and stays within 5% of the float32 output."""
    frames, masks = _inputs()
    rv, rs = prepare_region_inputs(frames, masks, frame_index=0, mask_size=8)
    rv, rs = rv[:, None].cuda(), rs[:, None].cuda()
    ids, mask = IDS.cuda(), (IDS != 0).long().cuda()
    agg = _aggregator(tiny_config).cuda()
    with torch.no_grad():
        want = agg(frames.cuda(), ids, mask, region_visual=rv, region_shape=rs)
        agg.to(torch.bfloat16)
        got = agg(frames.cuda().bfloat16(), ids, mask, region_visual=rv.bfloat16(), region_shape=rs.bfloat16())
    assert got.is_cuda and got.dtype == torch.bfloat16
    err = torch.linalg.vector_norm(got.float() - want) / torch.linalg.vector_norm(want)
    assert float(err) < 5e-2
