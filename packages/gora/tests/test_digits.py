"""The digits tasks: the domain shifts (known answers), the shifted-domain split and the reused pretrained head."""

from __future__ import annotations

import copy

import pytest
import torch
from nips25_gora.digits import SHIFTS, linear_probe, load_digits_shift, load_digits_transfer, pretrain, shift_pixels
from nips25_gora.reproduce import PROFILES
from nips25_gora.transfer import DIGITS_SHIFT, _cached_prepare, _shift_one_over_l


def _one_pixel(row: int, col: int) -> torch.Tensor:
    image = torch.zeros(1, 8, 8)
    image[0, row, col] = 1.0
    return image.reshape(1, 64)


@pytest.mark.parametrize(("kind", "where"), [("hflip", (1, 6)), ("vflip", (6, 1)), ("translate", (1, 3))])
def test_shift_moves_a_single_pixel_where_expected(kind, where):
    moved = shift_pixels(_one_pixel(1, 1), kind)
    assert torch.equal(moved, _one_pixel(*where))


def test_shift_invert_and_translate_fill():
    x = torch.rand(3, 64)
    assert torch.equal(shift_pixels(x, "invert"), 1.0 - x)
    moved = shift_pixels(x, "translate").reshape(3, 8, 8)
    assert torch.equal(moved[:, :, :2], torch.zeros(3, 8, 2))  # zero fill on the left
    assert torch.equal(moved[:, :, 2:], x.reshape(3, 8, 8)[:, :, :6])  # the two rightmost columns drop out
    assert torch.equal(x, x.clone())  # input untouched (shift returns a new tensor)


def test_shift_rejects_bad_input():
    with pytest.raises(ValueError, match="kind"):
        shift_pixels(torch.zeros(1, 64), "rotate")
    with pytest.raises(ValueError, match="pixels"):
        shift_pixels(torch.zeros(1, 8, 8), "hflip")
    with pytest.raises(ValueError, match="kind"):
        load_digits_shift(kind="rotate", shots=5)
    with pytest.raises(ValueError, match="shots"):
        load_digits_shift(kind="hflip", shots=0)


@pytest.mark.parametrize("kind", SHIFTS)
def test_shifted_task_keeps_the_pretraining_set_and_shifts_digits_0_to_4(kind):
    shifted, transfer = load_digits_shift(kind=kind, shots=5, seed=3), load_digits_transfer(shots=5, seed=3)
    for key in ("pixels", "labels"):  # the same pretraining set, so a seed's pretrained net is shared
        assert torch.equal(shifted.source[key], transfer.source[key])
    assert torch.equal(shifted.train["labels"].bincount(), torch.full((5,), 5))
    assert torch.equal(shifted.val["labels"].bincount(), torch.full((5,), 20))
    n_source = len(shifted.source["labels"])
    assert len(shifted.train["labels"]) + len(shifted.val["labels"]) + len(shifted.test["labels"]) == n_source
    # every few-shot image is the shift of a source image of the same digit
    images = shift_pixels(shifted.source["pixels"], kind)
    for pixels, label in zip(shifted.train["pixels"], shifted.train["labels"]):
        match = (images == pixels).all(dim=1)
        assert bool((shifted.source["labels"][match] == label).any())


@pytest.fixture(scope="module")
def cache() -> dict:
    """Seed 0 pretrained and probed once for the tests below (the quick profile's few-shot size)."""
    prepared: dict = {}
    _cached_prepare(prepared, 0, 5)
    return prepared


def test_cache_keeps_the_pretrained_head_and_the_probe_is_unchanged(cache):
    data, probed = cache[0]
    pretrained = cache["pretrained", 0]
    fresh = pretrain(data.source, seed=0)
    for a, b in zip(pretrained.state_dict().values(), fresh.state_dict().values()):
        assert torch.equal(a, b)  # the digits-0-4 net with its own head, bit for bit
    old = linear_probe(copy.deepcopy(fresh), data.train, seed=0)  # the probed net as before 0.2.5
    for a, b in zip(probed.state_dict().values(), old.state_dict().values()):
        assert torch.equal(a, b)
    assert not torch.equal(pretrained.classifier.weight, probed.classifier.weight)


def test_shift_task_reuses_the_head_and_full_rank_gora_is_the_sgd_step(cache):
    head = cache["pretrained", 0].classifier.weight.clone()
    row = _shift_one_over_l(0, PROFILES["tiny"], cache)
    assert torch.equal(cache["pretrained", 0].classifier.weight, head)  # the cached net is not modified
    assert row["full_rank_minus_sgd"] < 1e-5
    assert row["xi"] == pytest.approx(1 / row["L"])
    data = load_digits_shift(kind=DIGITS_SHIFT, shots=5, seed=0)
    assert 0.0 <= row["head_test_accuracy"] <= 1.0 and len(data.test["labels"]) > 700
