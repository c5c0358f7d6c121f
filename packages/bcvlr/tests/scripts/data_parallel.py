"""Run under ``accelerate launch`` by ``test_distributed.py``: BCV-LR pre-training (Stages 2-3), a short online
loop and BCO, then a checkpoint. Usage: ``data_parallel.py OUT_DIR PER_PROCESS_BATCH``.

Every process records its calls of ``torch.save`` in ``OUT_DIR/saves_rank<r>.txt`` (only rank 0 may write the
checkpoint) and writes the weights after pre-training to ``OUT_DIR/pretrain_rank<r>.pt`` for the comparison.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from accelerate import Accelerator
from nips25_bcvlr import BCVLR
from nips25_bcvlr.baselines import BCO, BaselineConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from distributed_setup import make_agent_inputs


def main() -> None:
    out, batch = Path(sys.argv[1]), int(sys.argv[2])
    accelerator = Accelerator()
    rank = accelerator.process_index
    saves: list[str] = []
    real_save = torch.save

    def recording_save(obj, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        saves.append(str(path))
        return real_save(obj, path, *args, **kwargs)

    torch.save = recording_save  # type: ignore[assignment]
    config, video, envs = make_agent_inputs(batch)
    agent = BCVLR(config, obs_shape=video.frames.shape[1:], action_space=envs[0].action_space, seed=0,
                  accelerator=accelerator)  # fmt: skip
    agent.pretrain(video, show_progress=False)
    weights = {m: {k: v.clone() for k, v in sd.items()} for m, sd in agent.state_dict()["modules"].items()}
    real_save(weights, out / f"pretrain_rank{rank}.pt")  # the test's own per-rank record, not the package's write
    agent.online(envs, 16, show_progress=False)
    bco = BCO(video.frames.shape[1:], envs[0].action_space, config=BaselineConfig(bc_steps=2, idm_steps=2, n_iters=2,
              batch_size=batch), seed=0, accelerator=accelerator)  # fmt: skip
    bco.learn(video, envs, 16)
    agent.save(out / "agent.pt")
    online_weights = agent.policy.head.out.weight.detach().clone()
    gathered = accelerator.gather(online_weights[None])
    assert torch.equal(gathered[0], gathered[-1]), "ranks disagree on the weights after the online loop"
    (out / f"saves_rank{rank}.txt").write_text("\n".join(saves))
    print(f"rank {rank} of {accelerator.num_processes} done")


if __name__ == "__main__":
    main()
