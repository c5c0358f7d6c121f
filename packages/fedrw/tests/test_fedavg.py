"""FedAvg with weights: determinism, unit weights = plain FedAvg bit for bit, perplexity known answer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_fedrw import FedAvgConfig, LMConfig, TinyCausalLM, fedavg_train, perplexity, sample_weights

SMALL = LMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=16, max_len=24)
CFG = FedAvgConfig(rounds=2, local_steps=2, batch_size=4)
DATA = [["the rose is red", "by any other name", "thy eternal summer"], ["so long lives this", "and this gives life"]]


def _params(model: TinyCausalLM) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def test_training_is_deterministic_under_a_seed():
    m1, h1 = fedavg_train(DATA, config=CFG, model_config=SMALL, seed=3)
    m2, h2 = fedavg_train(DATA, config=CFG, model_config=SMALL, seed=3)
    m3, _ = fedavg_train(DATA, config=CFG, model_config=SMALL, seed=4)
    assert h1 == h2 and all(torch.equal(a, b) for a, b in zip(_params(m1), _params(m2)))
    assert not all(torch.equal(a, b) for a, b in zip(_params(m1), _params(m3)))
    assert perplexity(m1, ["a test line"]) == perplexity(m2, ["a test line"])


def test_no_duplicates_gives_unit_weights_and_plain_fedavg_bit_for_bit():
    """With every F = 1 the FedRW weights are 1 and training equals plain FedAvg exactly."""
    weights = [sample_weights(np.ones(len(d), dtype=np.int64)) for d in DATA]
    m_rw, _ = fedavg_train(DATA, weights=weights, config=CFG, model_config=SMALL, seed=0)
    m_plain, _ = fedavg_train(DATA, config=CFG, model_config=SMALL, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(_params(m_rw), _params(m_plain)))


def test_perplexity_of_a_uniform_model_is_the_vocabulary_size():
    """Zero logits give a uniform next-byte distribution: perplexity exp(ln 258) = 258."""
    model = TinyCausalLM(SMALL)
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.zero_()
    assert perplexity(model, ["short", "a longer line of text"]) == pytest.approx(258.0, rel=1e-5)


def test_fedavg_rejects_bad_input():
    with pytest.raises(ValueError, match="local_steps"):
        FedAvgConfig(local_steps=0)
    with pytest.raises(ValueError, match="lr"):
        FedAvgConfig(lr=float("nan"))
    with pytest.raises(ValueError, match="n_heads"):
        LMConfig(d_model=10, n_heads=3)
    with pytest.raises(ValueError, match="client_samples"):
        fedavg_train([], config=CFG, model_config=SMALL)
    with pytest.raises(ValueError, match=r"weights\[0\]"):
        fedavg_train(DATA, weights=[np.ones(2), np.ones(2)], config=CFG, model_config=SMALL)
    with pytest.raises(ValueError, match=r"weights\[1\]"):
        fedavg_train(DATA, weights=[np.ones(3), np.array([1.0, np.inf])], config=CFG, model_config=SMALL)
    with pytest.raises(ValueError, match="samples"):
        perplexity(TinyCausalLM(SMALL), [])


def test_epoch_budget_visits_every_sample_once_per_epoch_and_fewer_samples_take_fewer_steps():
    """EP-MPD's budget: local epochs over shuffled client data, so a deduplicated (smaller) client steps less."""
    from nips25_fedrw.fedavg import _batches

    cfg = FedAvgConfig(rounds=1, batch_size=2, local_epochs=2)
    batches = _batches(5, cfg, np.random.default_rng(0))
    assert [len(b) for b in batches] == [2, 2, 1, 2, 2, 1]
    assert sorted(np.concatenate(batches[:3]).tolist()) == [0, 1, 2, 3, 4] == sorted(np.concatenate(batches[3:]))
    _, hist = fedavg_train(DATA, config=cfg, model_config=SMALL, seed=0)
    assert hist[0]["steps"] == 2 * (2 + 1)  # clients of 3 and 2 samples: 2 + 1 batches per epoch
    _, hist_dedup = fedavg_train([DATA[0][:1], DATA[1][:1]], config=cfg, model_config=SMALL, seed=0)
    assert hist_dedup[0]["steps"] == 2 * (1 + 1)
    with pytest.raises(ValueError, match="local_epochs"):
        FedAvgConfig(local_epochs=0)


def test_perplexity_rejects_a_bool_batch_size():
    """Review regression: ``batch_size=True`` passed the int check and evaluated one sample per batch."""
    with pytest.raises(ValueError, match="batch_size"):
        perplexity(TinyCausalLM(LMConfig()), ["abc"], batch_size=True)


def test_model_and_model_config_together_are_rejected():
    with pytest.raises(ValueError, match="model_config"):
        fedavg_train(DATA, config=CFG, model_config=SMALL, model=TinyCausalLM(SMALL))


def test_non_numeric_weights_and_bool_sizes_are_errors_naming_the_argument():
    """Review finding (0.2.2): a string weight raised numpy's 'cannot convert string to float'; a bool size passed."""
    with pytest.raises(TypeError, match=r"weights\[1\] must be a numeric array"):
        fedavg_train(DATA, weights=[np.ones(3), np.array(["x", "y"])], config=CFG, model_config=SMALL)
    with pytest.raises(ValueError, match="n_layers"):
        LMConfig(n_layers=True)
