"""Run by ``test_distributed.py`` under ``accelerate launch``: train the tiny pair and report what each rank did.

Usage: ``train_pair_distributed.py OUT_DIR``. The main process saves both models' weights to ``OUT_DIR/weights.npz``;
every rank prints a ``WRITES <rank> <keys>`` line listing the cache entries it wrote and a ``ROWS <rank>
[sizes]`` line with the batch sizes its generator training read.
"""

import sys
from pathlib import Path

import nips25_vgsearch.arith as arith
import numpy as np
from accelerate import Accelerator


def main() -> None:
    out = Path(sys.argv[1])
    accelerator = Accelerator()
    writes: list[str] = []
    real_cached = arith.cached

    def spy(key, build, **kw):  # records which rank builds (writes) an entry
        def recording_build():
            value = build()
            writes.append(key)
            return value

        return real_cached(key, recording_build, **kw)

    arith.cached = spy
    rows: set[int] = set()
    real_forward = arith.StepMLP.forward

    def counting_forward(self, x):  # records the rows each training step of this rank reads
        rows.add(int(x.shape[0]))
        return real_forward(self, x)

    arith.StepMLP.forward = counting_forward
    gen, prm, info = arith.load_or_train_pair(gen_steps=6, prm_steps=6, seed=3, depth=4, accelerator=accelerator)
    print(f"WRITES {accelerator.process_index} {','.join(writes) or '-'}", flush=True)
    print(f"ROWS {accelerator.process_index} {sorted(rows)}", flush=True)
    if accelerator.is_main_process:
        arrays = {f"gen.{k}": v.numpy() for k, v in gen.model.state_dict().items()}
        arrays |= {f"prm.{k}": v.numpy() for k, v in prm.model.state_dict().items()}
        np.savez(out / "weights.npz", **arrays, gen_loss=info["gen_loss"], prm_loss=info["prm_loss"])
    accelerator.wait_for_everyone()


if __name__ == "__main__":  # not at import: pytest --doctest-modules imports this file
    main()
