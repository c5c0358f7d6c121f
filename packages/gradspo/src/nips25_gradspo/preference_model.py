r"""SPO's step-aware preference model (the reward of ``--profile paper``): a time-conditioned PickScore/CLIP.

Liang et al. (SPO, 2024) fine-tune PickScore so that it scores noisy images: the timestep :math:`t` is embedded
(sinusoidal, 256 frequencies, then Linear-SiLU-Linear to the vision width :math:`d`) into :math:`c_t`, and every
vision encoder layer is modulated adaLN-style,

.. math:: h \leftarrow h + g_1 \odot \mathrm{Attn}(\mathrm{LN}_1(h)(1 + s_1) + b_1), \quad
          h \leftarrow h + g_2 \odot \mathrm{MLP}(\mathrm{LN}_2(h)(1 + s_2) + b_2),

with :math:`(b_1, s_1, g_1, b_2, s_2, g_2) = W\,\mathrm{SiLU}(c_t) + w`; the pooled ``[CLS]`` output is modulated the
same way by a second :math:`(b, s)` pair. The score is PickScore's :math:`e^{\tau}\cos(f_I, f_T)`.

The modules here are ours, built around a transformers ``CLIPModel``; :func:`map_released_keys` renames the released
checkpoint's keys (``model.vision_model.encoder.layers.{i}.adaLN_modulation.1.*``,
``model.vision_model.adaLN_modulation.1.*``, ``model.t_embedder.mlp.{0,2}.*``, ``model.<CLIP key>``) onto them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["PreferenceModelReward", "TimeConditionedCLIP", "load_step_aware_preference_model", "map_released_keys"]


def _frequencies(t: torch.Tensor, dim: int) -> torch.Tensor:
    """``[cos(t f), sin(t f)]`` with ``f_k = 10000^{-k/(dim/2)}`` (``(B,)`` -> ``(B, dim)``)."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    out = torch.cat([args.cos(), args.sin()], dim=-1)
    return torch.cat([out, torch.zeros_like(out[:, :1])], dim=-1) if dim % 2 else out


class TimeConditionedCLIP(nn.Module):
    """A transformers ``CLIPModel`` whose vision tower is modulated by the timestep (module docstring).

    Args:
        clip: the ``CLIPModel`` (PickScore_v1 for SD1.5 in SPO).
        frequency_dim: width of the sinusoidal timestep code (256).

    Example:
        >>> from transformers import CLIPConfig, CLIPModel
        >>> cfg = CLIPConfig(text_config=dict(hidden_size=8, intermediate_size=8, num_hidden_layers=1,
        ...     num_attention_heads=2, vocab_size=20, max_position_embeddings=8), vision_config=dict(hidden_size=8,
        ...     intermediate_size=8, num_hidden_layers=1, num_attention_heads=2, image_size=8, patch_size=4),
        ...     projection_dim=4)
        >>> m = TimeConditionedCLIP(CLIPModel(cfg))
        >>> m.score(torch.zeros(2, 3, 8, 8), torch.ones(2, 3, dtype=torch.long), torch.tensor([10, 500])).shape
        torch.Size([2])
    """

    def __init__(self, clip: Any, *, frequency_dim: int = 256) -> None:
        super().__init__()
        if not hasattr(clip, "vision_model") or not hasattr(clip, "visual_projection"):
            raise TypeError(f"clip must be a transformers CLIPModel, got {type(clip).__name__}")
        if isinstance(frequency_dim, bool) or not isinstance(frequency_dim, int) or frequency_dim < 2:
            raise ValueError(f"frequency_dim must be an int >= 2, got {frequency_dim!r}")
        self.clip = clip
        self.frequency_dim = frequency_dim
        d = clip.config.vision_config.hidden_size
        self.t_embedder = nn.Sequential(nn.Linear(frequency_dim, d), nn.SiLU(), nn.Linear(d, d))
        n_layers = len(clip.vision_model.encoder.layers)
        self.layer_modulation = nn.ModuleList(nn.Sequential(nn.SiLU(), nn.Linear(d, 6 * d)) for _ in range(n_layers))
        self.pooled_modulation = nn.Sequential(nn.SiLU(), nn.Linear(d, 2 * d))
        self.set_identity_modulation()

    @torch.no_grad()
    def set_identity_modulation(self) -> None:
        """Zero every modulation weight and set shifts/scales to 0 and gates to 1: the plain CLIP vision tower."""
        d = self.clip.config.vision_config.hidden_size
        for mod in self.layer_modulation:
            lin = mod[1]  # type: ignore[index]
            lin.weight.zero_()
            lin.bias.zero_()
            lin.bias[2 * d : 3 * d] = 1.0
            lin.bias[5 * d :] = 1.0
        last = self.pooled_modulation[1]
        assert isinstance(last, nn.Linear)
        last.weight.zero_()
        last.bias.zero_()

    def image_features(self, pixel_values: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Projected image features ``(B, P)`` of normalised pixels ``(B, 3, S, S)`` at timesteps ``t`` ``(B,)``."""
        vm = self.clip.vision_model
        c = self.t_embedder(_frequencies(t, self.frequency_dim).to(pixel_values.dtype))
        h = vm.pre_layrnorm(vm.embeddings(pixel_values))
        for layer, mod in zip(vm.encoder.layers, self.layer_modulation, strict=True):
            b1, s1, g1, b2, s2, g2 = (v[:, None] for v in mod(c).chunk(6, dim=1))
            h = h + g1 * layer.self_attn(hidden_states=layer.layer_norm1(h) * (1 + s1) + b1)[0]
            h = h + g2 * layer.mlp(layer.layer_norm2(h) * (1 + s2) + b2)
        pooled = vm.post_layernorm(h[:, 0])
        b, s = self.pooled_modulation(c).chunk(2, dim=1)
        return self.clip.visual_projection(pooled * (1 + s) + b)

    def score(self, pixel_values: torch.Tensor, input_ids: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        r"""PickScore :math:`e^{\tau}\cos(f_I(x, t), f_T(\text{ids}))` per row, ``(B,)``.

        Raises:
            ValueError: if the batch sizes of the three inputs differ.
        """
        if not (pixel_values.shape[0] == input_ids.shape[0] == t.shape[0]):
            raise ValueError(
                f"pixel_values, input_ids and t must share the batch size, got {pixel_values.shape[0]}, "
                f"{input_ids.shape[0]}, {t.shape[0]}"
            )
        fi = F.normalize(self.image_features(pixel_values, t), dim=-1)
        text = self.clip.get_text_features(input_ids=input_ids)
        ft = F.normalize(text if isinstance(text, torch.Tensor) else text.pooler_output, dim=-1)
        return self.clip.logit_scale.exp() * (fi * ft).sum(-1)


_RENAMES = (
    (re.compile(r"^vision_model\.encoder\.layers\.(\d+)\.adaLN_modulation\.1\."), r"layer_modulation.\1.1."),
    (re.compile(r"^vision_model\.adaLN_modulation\.1\."), "pooled_modulation.1."),
    (re.compile(r"^t_embedder\.mlp\.(\d)\."), r"t_embedder.\1."),
)


def map_released_keys(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename a released step-aware preference model state dict onto :class:`TimeConditionedCLIP`'s keys.

    The released file holds the keys of SPO's wrapper (``model.`` prefix, optional); time-conditioning keys are
    renamed as in the module docstring, every other key becomes ``clip.<key>``.

    Raises:
        ValueError: if ``state_dict`` is empty.
    """
    if not state_dict:
        raise ValueError("state_dict is empty")
    out: dict[str, torch.Tensor] = {}
    for key, value in state_dict.items():
        k = key[len("model.") :] if key.startswith("model.") else key
        for pattern, repl in _RENAMES:
            if pattern.match(k):
                out[pattern.sub(repl, k)] = value
                break
        else:
            out[f"clip.{k}"] = value
    return out


def load_step_aware_preference_model(
    clip_dir: str | Path, *, checkpoint: str | Path | None = None
) -> tuple[TimeConditionedCLIP, Any, Any]:
    """Load the step-aware preference model from local files (nothing is downloaded).

    Args:
        clip_dir: a transformers CLIP directory (PickScore_v1 for SD1.5) with its tokenizer and image processor
            (``config.json``, weights, ``preprocessor_config.json``, tokenizer files).
        checkpoint: SPO's released step-aware preference model state dict (``.bin``/``.pt`` via ``torch.load`` or
            ``.safetensors``); ``None`` keeps the plain CLIP (identity modulation).

    Returns:
        ``(model, tokenizer, image_processor)``; the model is in eval mode with gradients off.

    Raises:
        FileNotFoundError: naming ``clip_dir`` or ``checkpoint`` when missing.
        ValueError: if the checkpoint's keys do not match the model.
    """
    from transformers import AutoTokenizer, CLIPImageProcessor, CLIPModel

    root = Path(clip_dir)
    if not (root / "config.json").is_file():
        raise FileNotFoundError(f"clip_dir: no CLIP model at {root} (config.json missing)")
    clip = CLIPModel.from_pretrained(str(root), local_files_only=True)
    model = TimeConditionedCLIP(clip)
    if checkpoint is not None:
        ck = Path(checkpoint)
        if not ck.is_file():
            raise FileNotFoundError(f"checkpoint: no file at {ck}")
        if ck.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(ck))
        else:
            state = torch.load(str(ck), map_location="cpu", weights_only=True)
        missing, unexpected = model.load_state_dict(map_released_keys(state), strict=False)
        missing = [k for k in missing if not k.endswith("position_ids")]
        if missing or unexpected:
            raise ValueError(f"checkpoint: keys do not match (missing {missing[:5]}, unexpected {unexpected[:5]})")
    model.eval().requires_grad_(False)
    return (
        model,
        AutoTokenizer.from_pretrained(str(root), local_files_only=True),
        CLIPImageProcessor.from_pretrained(str(root), local_files_only=True),
    )


class PreferenceModelReward:
    r"""A :class:`~nips25_gradspo.reward.StepAwareReward` from latents: decode with the VAE, preprocess as SPO
    (bicubic resize of the short side, centre crop, :math:`[-1, 1] \to [0, 1]`, CLIP normalisation) and score with
    the step-aware preference model at the candidate's timestep.

    Args:
        model: a :class:`TimeConditionedCLIP`.
        vae: the pipeline's ``AutoencoderKL``.
        image_size: the CLIP input side (``image_processor.crop_size``).
        mean, std: CLIP normalisation (``image_processor.image_mean``/``image_std``).
        ids_key: key of the ``(B, L)`` preference-model token ids in ``cond``.
    """

    def __init__(
        self,
        model: TimeConditionedCLIP,
        vae: Any,
        *,
        image_size: int,
        mean: tuple[float, float, float],
        std: tuple[float, float, float],
        ids_key: str = "spm_input_ids",
    ) -> None:
        if not isinstance(model, TimeConditionedCLIP):
            raise TypeError(f"model must be a TimeConditionedCLIP, got {type(model).__name__}")
        if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 1:
            raise ValueError(f"image_size must be a positive int, got {image_size!r}")
        self.model, self.vae, self.image_size, self.ids_key = model, vae, image_size, ids_key
        self.mean = torch.tensor(mean).view(1, 3, 1, 1)
        self.std = torch.tensor(std).view(1, 3, 1, 1)

    def __call__(self, x: torch.Tensor, t: torch.Tensor, cond: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Scores ``(B,)`` of latents ``x`` ``(B, 4, h, w)`` at timesteps ``t`` ``(B,)``.

        Raises:
            KeyError: if ``cond`` has no ``ids_key``.
        """
        if self.ids_key not in cond:
            raise KeyError(f"cond: missing {self.ids_key!r} (preference-model token ids)")
        img = self.vae.decode(x / self.vae.config.scaling_factor).sample
        short = min(img.shape[-2:])
        scale = self.image_size / short
        size = (int(img.shape[-2] * scale + 0.5), int(img.shape[-1] * scale + 0.5))
        img = F.interpolate(img, size=size, mode="bicubic", align_corners=False)
        top, left = (size[0] - self.image_size) // 2, (size[1] - self.image_size) // 2
        img = img[..., top : top + self.image_size, left : left + self.image_size]
        img = ((img / 2 + 0.5).clamp(0, 1).float() - self.mean.to(img.device)) / self.std.to(img.device)
        return self.model.score(img, cond[self.ids_key], t)
