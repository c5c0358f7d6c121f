"""The CPU proxy's training under accelerate: 2 CPU processes equal 1 process at the same global batch."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

pytest.importorskip("accelerate")

from nips25_shared.testing import run_accelerate

SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import torch
    from nips25_sama.proxy import ProxyTrainConfig, proxy_accelerator, proxy_config, train_proxy

    data_path, out, writes = sys.argv[1:4]
    acc = proxy_accelerator()
    data = torch.load(data_path, weights_only=False)
    cfg = proxy_config(vis_dim=int(data.tokens.shape[-1]), window=8)
    weights = {}
    for kind in ("sama", "mean_pool"):
        model = train_proxy(kind, data, cfg, ProxyTrainConfig(epochs=2, batch_size=4), seed=3, accelerator=acc)
        weights[kind] = np.concatenate([p.detach().cpu().numpy().ravel() for p in model.parameters()])
    acc.wait_for_everyone()
    if acc.is_main_process:
        np.savez(out, **weights)
        with open(writes, "a") as fh:
            fh.write(f"{acc.process_index}\\n")
    """
)


@pytest.mark.distributed
def test_two_processes_equal_one_and_only_rank_0_writes(tmp_path, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """Sharded batches + find_unused_parameters: the same weights as one process after 4 AdamW steps.

    5 clips in global batches of 4: the last batch holds one clip, so rank 1 runs the zero-loss step there. The
    one-process reference runs in this process (same code path, world size 1).
    """
    import torch
    from nips25_sama.proxy import ProxyTrainConfig, make_proxy_data, proxy_accelerator, proxy_config, train_proxy

    data = make_proxy_data(5, tokenizer=tokenizer, n_frames=4, seed=1)
    torch.save(data, tmp_path / "data.pt")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    run_accelerate(script, str(tmp_path / "data.pt"), str(tmp_path / "w2.npz"), str(tmp_path / "writes.txt"),
                   num_processes=2, timeout=240)  # fmt: skip
    two = np.load(tmp_path / "w2.npz")
    cfg = proxy_config(vis_dim=int(data.tokens.shape[-1]), window=8)
    for kind in ("sama", "mean_pool"):
        model = train_proxy(kind, data, cfg, ProxyTrainConfig(epochs=2, batch_size=4), seed=3,
                            accelerator=proxy_accelerator())  # fmt: skip
        one = np.concatenate([p.detach().cpu().numpy().ravel() for p in model.parameters()])
        # The gradient all-reduce changes only the float32 summation order (~1e-7 relative). AdamW normalises each
        # element's step (lr 1e-3), so an element whose gradient is at float-noise level can move by part of a step
        # either way: 4 steps bound that by 4e-3 in the worst element; a sharding or weighting error (each rank
        # training on its half alone, or a double count of the one-clip batch) moves most weights by about a step.
        gap = np.abs(two[kind] - one)
        assert gap.max() < 4e-3, kind
        assert gap.mean() < 1e-5, kind
    assert (tmp_path / "writes.txt").read_text().split() == ["0"]


def test_multiprocess_accelerator_needs_find_unused_parameters() -> None:
    """A plain multi-process accelerator is refused by name (DDP would fail at the second step)."""
    from nips25_sama.proxy import ProxyData, ProxyTrainConfig, proxy_config, train_proxy

    class _Two:
        num_processes, process_index, is_main_process, device, ddp_handler = 2, 0, True, "cpu", None

    data = ProxyData(*(np.zeros(1) for _ in range(6)), meta=[])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="accelerator.*find_unused_parameters"):
        train_proxy("sama", data, proxy_config(vis_dim=64), ProxyTrainConfig(epochs=1), seed=0, accelerator=_Two())
