"""The contrastive encoder under accelerate: 2 CPU processes equal 1 process at the same global batch."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("accelerate")

from nips25_shared.testing import run_accelerate

SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import torch
    from accelerate import Accelerator
    from nips25_tmex.encoder import EncoderConfig, train_content_encoder

    out, writes = sys.argv[1], sys.argv[2]
    acc = Accelerator()
    enc = train_content_encoder(EncoderConfig(steps=6, batch_size=64, hidden=16, cosine_decay=True), seed=3,
                                accelerator=acc)
    acc.wait_for_everyone()
    if acc.is_main_process:
        weights = np.concatenate([p.detach().numpy().ravel() for p in enc.network.parameters()])
        np.savez(out, weights=weights, losses=np.asarray(enc.losses))
        with open(writes, "a") as fh:
            fh.write(f"{acc.process_index}\\n")
    """
)


@pytest.mark.distributed
def test_two_processes_equal_one_and_only_rank_0_writes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    for n in (1, 2):
        run_accelerate(script, str(tmp_path / f"w{n}.npz"), str(tmp_path / f"writes{n}.txt"), num_processes=n,
                       timeout=240)  # fmt: skip
    one, two = np.load(tmp_path / "w1.npz"), np.load(tmp_path / "w2.npz")
    # The losses see the whole global batch: float32 all-gather and gradient all-reduce change only the summation
    # order (~1e-7 relative). The weights after 6 Adam steps (lr 1e-3) agree to 1e-4 = 0.1 lr: Adam normalises each
    # element's gradient, so an element whose gradient is at float-noise level can move by a sizeable part of a
    # step either way (seen: 6.5e-5); a sharding or schedule error moves every weight by about a step or more.
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-5)
    np.testing.assert_allclose(two["weights"], one["weights"], atol=1e-4)
    assert np.abs(two["weights"] - one["weights"]).mean() < 1e-5
    assert (tmp_path / "writes2.txt").read_text().split() == ["0"]


def test_batch_must_split_evenly_over_processes() -> None:
    from accelerate import Accelerator
    from nips25_tmex.encoder import EncoderConfig, train_content_encoder

    class _Two:
        num_processes, process_index, device = 2, 0, "cpu"

    with pytest.raises(ValueError, match="divisible"):
        train_content_encoder(EncoderConfig(steps=1, batch_size=5), accelerator=_Two())
    assert Accelerator().num_processes == 1
