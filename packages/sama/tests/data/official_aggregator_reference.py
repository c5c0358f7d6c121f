"""Provenance of official_aggregator.pt: the official SAMA modules (random weights, tiny widths) run through the
official ``spatial_temporal_token_generation`` / ``temporal_context_inject``, unchanged, on a stand-in ``self``.

Run once (2026-12-01) outside the repository, with ``projects/llava_sam2/models/{internvl_sama,qformer}.py`` of
sunye23/SAMA@7c75e44 under ROOT and transformers 4.46.3 first on the path (the official Q-Former needs its API).
Patches, none in the computation: xtuner/mmengine imports stubbed; transformers' pruning helpers aliased; the region
mask's ``.to(torch.bfloat16)`` cast becomes the feature dtype (binary masks: exact in any float dtype). Every prompt
carries at least one region, so the official 1e-6 "dummy feature" term (kept only to hold unused modules in the DDP
graph; not reproduced by this package) is not taken. Saves the float32 weights, float64 inputs and the output.
"""

import sys
import types
from pathlib import Path

import torch
from torch import nn

ROOT = "/tmp/sama_scratch/official"
sys.path.insert(0, ROOT)
for name in ("xtuner", "xtuner.model", "xtuner.model.utils", "mmengine"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["xtuner.model"].InternVL_V1_5 = nn.Module
for f in ("find_all_linear_names", "get_peft_model_state_dict", "guess_load_checkpoint", "make_inputs_require_grad"):
    setattr(sys.modules["xtuner.model.utils"], f, None)
sys.modules["mmengine"].print_log = print
import transformers.modeling_utils as _mu  # noqa: E402
import transformers.pytorch_utils as _pu  # noqa: E402

for _f in ("apply_chunking_to_forward", "find_pruneable_heads_and_indices", "prune_linear_layer"):
    if not hasattr(_mu, _f):  # moved to pytorch_utils in newer transformers (import location only)
        setattr(_mu, _f, getattr(_pu, _f, None))  # pruning helpers are never called here
src = Path(ROOT, "projects/llava_sam2/models/internvl_sama.py").read_text()
OLD = "temp_obj_mask = cur_mask[tj].to(image_features.device).to(torch.bfloat16)"
assert src.count(OLD) == 1
src = src.replace(OLD, OLD.replace("torch.bfloat16", "image_features.dtype"))  # binary masks: exact in any float dtype
mod = types.ModuleType("internvl_sama")
sys.modules["internvl_sama"] = mod
exec(compile(src, "internvl_sama.py", "exec"), mod.__dict__)
from projects.llava_sam2.models.qformer import BertConfig, BertLMHeadModel  # noqa: E402

torch.manual_seed(0)
C, SW, H, HEADS, INTER, NQS, NQT, TPF = 12, 10, 8, 2, 16, 4, 3, 16
VOCAB = 30530
S, RH = 8, 16  # shape-mask side and MLP width (official: 112, 1024; the method does not depend on them)


def cfg(layers, width, freq, nq):
    c = BertConfig(
        vocab_size=VOCAB,
        hidden_size=H,
        num_hidden_layers=layers,
        num_attention_heads=HEADS,
        intermediate_size=INTER,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=64,
        pad_token_id=0,
    )
    c.encoder_width, c.add_cross_attention, c.cross_attention_freq, c.query_length = width, True, freq, nq
    return c


class Official(nn.Module):
    pass


cls = next(
    v
    for k, v in vars(mod).items()
    if k[0].isupper()
    and isinstance(v, type)
    and issubclass(v, nn.Module)
    and "spatial_temporal_token_generation" in vars(v)
)
o = Official()
o.mask_pooling = mod.MaskPooling()
o.spatial_Qformer = BertLMHeadModel(config=cfg(2, SW, 2, NQS))
o.spatial_Qformer.cls = None
o.spatial_Qformer_query_tokens = nn.Parameter(torch.randn(1, NQS, H) * 0.02)
o.temporal_Qformer = BertLMHeadModel(config=cfg(2, H, 1, NQT))
o.temporal_Qformer.cls = None
o.temporal_Qformer_query_tokens = nn.Parameter(torch.randn(1, NQT, H) * 0.02)
o.Qformer_mask_pooling_proj = nn.Linear(C, C)
o.Qformer_mask_proj = mod.MLP(S * S, RH, C, 3)
o.Qformer_mask_pooling_proj_st = nn.Linear(C, H)
o.Qformer_mask_proj_st = mod.MLP(S * S, RH, H, 3)
o.spatial_Qformer_ln = nn.LayerNorm(SW)
o.spatial_Qformer.bert.embeddings.word_embeddings = None
o.spatial_Qformer.bert.embeddings.position_embeddings = None
for layer in o.spatial_Qformer.bert.encoder.layer:
    layer.output = None
    layer.intermediate = None
o.vlm2spatial_Qformer_proj = nn.Linear(C, SW)
o.Qformer_temp_attn_q = nn.Linear(C, C)
o.Qformer_temp_attn_k = nn.Linear(H, C)
o.Qformer_temp_attn_v = nn.Linear(H, C)
o.Qformer_temp_proj = nn.Linear(C, C)
o.Qformer_final_proj = nn.Linear(C, C)
o.window_size = o.stride = 8
with torch.no_grad():  # random, non-trivial weights everywhere (LayerNorms included)
    for p in o.parameters():
        p.copy_((torch.randn_like(p) * 0.3).float())  # float32-exact values, stored as float32
o = o.double().eval()
sys.path.insert(0, "/work/wt-sama/packages/sama/src")
from nips25_sama.loading import build_temporal_tokenizer  # noqa: E402

o.Qformer_temporal_tokenizer = build_temporal_tokenizer()
T = 5
frames = torch.randn(T, TPF, C, dtype=torch.float64)
prompts = ["which way does <mask> move?", "what is <mask> doing near <mask>?", "describe <mask> in the video."]
masks = torch.zeros(4, T, 56, 56)  # region masks per frame, one per <mask> in order
masks[0, :, 8:30, 4:40] = 1
masks[1, :, 20:50, 10:28] = 1
masks[2, :, 0:20, 30:56] = 1
masks[3, :, 30:56, 0:56] = 1
masks112 = torch.nn.functional.interpolate(masks, size=(S, S), mode="nearest")
dense = [0, 2, 4]
random_idx = [[1, 2, 0]]
object.__setattr__(o, "temporal_context_inject", types.MethodType(cls.temporal_context_inject, o))
with torch.no_grad():
    out = cls.spatial_temporal_token_generation(
        o,
        frames,
        prompts=[list(prompts)],
        image_counts=[T],
        prompt_masks=[masks.double()],
        prompt_masks_112=[masks112.double()],
        dense_indices=[dense],
        random_idx_list=random_idx,
        mask_count=[[1, 2, 1]],
    )[0]
print(out.shape)
state = {k: v.float() for k, v in o.state_dict().items()}
torch.save(
    {
        "state": state,
        "frames": frames,
        "prompts": prompts,
        "masks": masks,
        "masks112": masks112,
        "dense": dense,
        "random_idx": random_idx[0],
        "mask_count": [1, 2, 1],
        "out": out,
        "config": dict(S=S, RH=RH, C=C, SW=SW, H=H, HEADS=HEADS, INTER=INTER, NQS=NQS, NQT=NQT, TPF=TPF),
    },
    "/tmp/sama_scratch/official_aggregator.pt",
)
