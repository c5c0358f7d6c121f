"""The transformers path on a CUDA device: tiny random-init Llama generator and PRM, CPU vs CUDA.

Skipped where no CUDA GPU is present. The models are those of ``test_hf.py``: the ``tiny`` fixture of ``conftest.py``.
Tolerances: float32 PRM scores are sigmoids of logits that differ from the CPU's by float32 rounding (~1e-6), so
``atol=1e-5``; bfloat16 keeps 8 mantissa bits (relative step 2^-8 ~ 4e-3 per op, a few ops deep), so a bf16 score
is within ``2e-2`` of the float32 one. Greedy decoding picks the same tokens unless two logits tie within rounding,
which the fixed seed rules out for these weights.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_vgsearch import HFPRM, STOP, HFGenerator, StepRequest, load_prm, vg_search

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

PROBLEMS = ["1+1", "22+3", "9"]
PREFIXES = ["a\n\nbb\n\n", "abc\n\nd", "x y z\n\n"]


@pytest.fixture(autouse=True)
def _no_tf32():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_greedy_steps_on_cuda_equal_cpu_steps(tiny):
    """Greedy decoding (``do_sample=False``) of a CUDA generator gives the CPU generator's steps, token for token."""
    tok, lm, _ = tiny
    reqs = [StepRequest("3+4", "", 0, 11), StepRequest("5-1", "a\n\n", 1, 12)]
    greedy = {"do_sample": False, "temperature": None, "top_p": None}
    want = HFGenerator(lm, tok, max_step_tokens=8, generate_kwargs=greedy).step(reqs)
    gpu_lm = type(lm)(lm.config).eval()
    gpu_lm.load_state_dict(lm.state_dict())
    got = HFGenerator(gpu_lm.cuda(), tok, max_step_tokens=8, generate_kwargs=greedy).step(reqs)
    assert got == want
    assert all(s.text.endswith(STOP) != s.finished for s in got)


def test_value_head_prm_on_cuda_equals_cpu_and_bf16_is_close(tiny, tmp_path):
    """PRM scores of the CUDA model equal the CPU scores; the bf16 CUDA load (the default dtype) is close."""
    tok, _, prm_model = tiny
    want = HFPRM(prm_model, tok, batch_size=2).score(PROBLEMS, PREFIXES)
    gpu_model = type(prm_model)(prm_model.config).eval()
    gpu_model.load_state_dict(prm_model.state_dict())
    got = HFPRM(gpu_model.cuda(), tok, batch_size=2).score(PROBLEMS, PREFIXES)
    assert [len(r) for r in got] == [2, 2, 1]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-5)
    prm_model.save_pretrained(tmp_path / "prm")
    tok.save_pretrained(tmp_path / "prm")
    bf16 = load_prm(tmp_path / "prm", dtype=torch.bfloat16)
    bf16.model.cuda()
    assert next(bf16.model.parameters()).dtype == torch.bfloat16
    for g, w in zip(bf16.score(PROBLEMS, PREFIXES), want):
        np.testing.assert_allclose(g, w, atol=2e-2)


def test_search_runs_on_cuda_models(tiny):
    """``vg_search`` end to end with the generator and the PRM on cuda."""
    tok, lm, prm_model = tiny
    lm2, prm2 = type(lm)(lm.config).eval(), type(prm_model)(prm_model.config).eval()
    lm2.load_state_dict(lm.state_dict())
    prm2.load_state_dict(prm_model.state_dict())
    gen = HFGenerator(lm2.cuda(), tok, max_step_tokens=4, max_answer_tokens=6)
    res = vg_search(["1+1", "2+2"], gen, HFPRM(prm2.cuda(), tok), n=4, beam_width=2, g=2, max_steps=3)
    assert len(res) == 2 and all(r.completions and r.ledger.verifier_calls > 0 for r in res)


def test_cached_decoder_on_cuda_equals_cpu(tiny):
    """Our decoding loop (KV cache across calls, rows leaving the batch) on cuda gives the CPU's greedy steps, and a
    second call that continues from the kept cache gives the CPU's continuation."""
    tok, lm, _ = tiny
    reqs = [StepRequest("3+4", "", 0, 11), StepRequest("5-1", "a\n\n", 1, 12), StepRequest("3+4", "", 0, 13)]
    cpu = HFGenerator(lm, tok, max_step_tokens=8, do_sample=False, decoder="cached")
    gpu_lm = type(lm)(lm.config).eval()
    gpu_lm.load_state_dict(lm.state_dict())
    gpu = HFGenerator(gpu_lm.cuda(), tok, max_step_tokens=8, do_sample=False, decoder="cached")
    want, got = cpu.step(reqs), gpu.step(reqs)
    assert got == want
    follow = [StepRequest(r.problem, r.prefix + s.text, r.depth + 1, r.seed) for r, s in zip(reqs, got)]
    assert gpu.step(follow) == cpu.step(follow)
