"""GoRA init + training on a tiny BERT under ``accelerate launch``; run by ``test_distributed.py``.

``python -m accelerate.commands.launch [--multi_gpu --num_processes P] dp_gora.py OUT GLOBAL_BATCH``: every process
takes ``GLOBAL_BATCH / P`` rows of each global batch (prepared loaders), so P processes and one process see the same
global batches. The main process writes ``OUT/result.pt`` (trained weights, losses, learning rates, ranks) and the
adapter; every process prints how many times it called ``save_pretrained``.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path


def main(out: Path, global_batch: int) -> None:
    import torch
    from accelerate import Accelerator
    from nips25_gora import GoraConfig, apply_gora, save_adapter
    from nips25_gora.training import TrainConfig, make_loader, train
    from peft import PeftModel
    from transformers import BertConfig, BertForSequenceClassification

    from nips25_shared import seed_everything

    calls = []
    original = PeftModel.save_pretrained

    def counting_save(self, *args, **kwargs):  # counts this process's writes
        calls.append(1)
        return original(self, *args, **kwargs)

    PeftModel.save_pretrained = counting_save  # type: ignore[method-assign]
    torch.set_num_threads(1)
    accelerator = Accelerator()
    per_process = global_batch // accelerator.num_processes
    seed_everything(0)
    cfg = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                     max_position_embeddings=16, num_labels=3, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)  # fmt: skip
    model = BertForSequenceClassification(cfg)
    gen = torch.Generator().manual_seed(1)
    n = 64
    ids = torch.randint(1, 60, (n, 10), generator=gen)
    lengths = torch.randint(4, 11, (n,), generator=gen)
    mask = (torch.arange(10)[None] < lengths[:, None]).long()
    data = {"input_ids": ids * mask, "attention_mask": mask, "labels": torch.randint(0, 3, (n,), generator=gen)}
    grad_loader = accelerator.prepare(make_loader(data, batch_size=per_process, seed=2))
    grad_batches = list(itertools.islice(grad_loader, 2))
    config = GoraConfig(target_modules=("query", "value"), r_ref=2, r_min=1, r_max=8, n_steps=2, xi=0.5,
                        modules_to_save=("classifier",))  # fmt: skip
    peft_model = apply_gora(model, grad_batches, config, accelerator=accelerator)
    log = train(peft_model, make_loader(data, batch_size=per_process, seed=3),
                TrainConfig(steps=12, batch_size=per_process, lr=1e-2, warmup_ratio=0.1, lora_plus_ratio=4.0),
                accelerator=accelerator)  # fmt: skip
    save_adapter(peft_model, out / "adapter", accelerator=accelerator)
    print(f"RANK {accelerator.process_index} SAVE_CALLS {len(calls)}", flush=True)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        inner = accelerator.unwrap_model(peft_model)
        weights = {k: v.detach().cpu().clone() for k, v in inner.named_parameters() if v.requires_grad}
        torch.save({"weights": weights, "losses": log.losses, "lrs": log.lrs, "ranks": inner.gora_init.ranks},
                   out / "result.pt")  # fmt: skip


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
