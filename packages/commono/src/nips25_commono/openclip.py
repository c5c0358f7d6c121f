"""Zero-shot presence detection with open_clip over image crops (the project's CLIP baseline; optional extra).

Weights come only from a local file (``pretrained="/path/open_clip_model.safetensors"``) or a local directory
(``model_name="local-dir:/path"``); hub names are refused, so nothing is downloaded. Install with
``pip install nips25-commono[clip]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from nips25_commono.detection import PerImageDetector
from nips25_commono.example import as_image

__all__ = ["OpenCLIPDetector", "crop_boxes"]


def crop_boxes(width: int, height: int, *, grid: int = 3, overlap: float = 0.5) -> list[tuple[int, int, int, int]]:
    """The whole image plus a ``grid x grid`` layout of overlapping square-ish crops, as PIL boxes.

    Args:
        width, height: image size in pixels, ``>= 1``.
        grid: crops per side, ``>= 1`` (``1`` gives only the whole image).
        overlap: fraction by which neighbouring crops overlap, in ``[0, 1)``.

    Returns:
        ``[(left, top, right, bottom), ...]``, the whole image first.

    Raises:
        ValueError: if a size, ``grid`` or ``overlap`` is out of range.
    """
    if not isinstance(width, int) or not isinstance(height, int) or width < 1 or height < 1:
        raise ValueError(f"width and height must be ints >= 1, got {width!r}, {height!r}")
    if not isinstance(grid, int) or grid < 1:
        raise ValueError(f"grid must be an int >= 1, got {grid!r}")
    if not 0.0 <= overlap < 1.0:
        raise ValueError(f"overlap must be in [0, 1), got {overlap}")
    boxes = [(0, 0, width, height)]
    if grid == 1:
        return boxes
    cw = width / (grid - (grid - 1) * overlap)
    ch = height / (grid - (grid - 1) * overlap)
    for r in range(grid):
        for c in range(grid):
            left, top = c * cw * (1 - overlap), r * ch * (1 - overlap)
            boxes.append((round(left), round(top), min(width, round(left + cw)), min(height, round(top + ch))))
    return boxes


class OpenCLIPDetector(PerImageDetector):
    r"""Per-image object presence from an open_clip model, by text prompts over image crops.

    For crops :math:`k` (the whole image and a ``grid x grid`` overlapping layout) and names :math:`j`, with unit
    image and text embeddings :math:`u_k, v_j`, the presence score is
    :math:`s_j = \max_k \mathrm{softmax}_j(\tau\, u_k^\top v_j)` over the names plus a background prompt
    (:math:`\tau` the model's learned logit scale). Whole-image CLIP is weak on multi-object scenes, hence crops.

    Args:
        model_name: an open_clip architecture name (``"ViT-B-32"``; tiny configs registered with
            ``open_clip.add_model_config`` work too) or ``"local-dir:/path"`` holding ``open_clip_config.json`` and
            weights.
        pretrained: a local weights file (``.pt``/``.bin``/``.safetensors``), or ``None`` for random
            initialisation (only useful in tests).
        threshold: presence probability at or above which an object counts as present.
        grid: crops per side (``1``: whole image only).
        overlap: overlap of neighbouring crops.
        prompt: text template with one ``{}`` for the object name.
        background_prompt: an extra class that absorbs crops showing none of the objects (``None`` to drop it).
        device: torch device string.
        model, preprocess, tokenizer: already-built open_clip parts (skips loading; for reuse across detectors).

    Raises:
        ImportError: if torch or open_clip_torch is missing (``pip install nips25-commono[clip]``).
        ValueError: if ``model_name`` is a hub name or empty, ``pretrained`` is not an existing local file, or a
            hyper-parameter is out of range.
        FileNotFoundError: if a ``local-dir:`` directory does not exist.

    Example:
        >>> det = OpenCLIPDetector("ViT-B-32", pretrained="/models/vit_b_32_laion2b.safetensors")  # doctest: +SKIP
        >>> det.answer(example)  # doctest: +SKIP
        'Answer: B, D'
    """

    def __init__(
        self,
        model_name: str,
        *,
        pretrained: str | Path | None = None,
        threshold: float = 0.5,
        grid: int = 3,
        overlap: float = 0.5,
        prompt: str = "a photo of a {}.",
        background_prompt: str | None = "a photo of an empty background.",
        device: str = "cpu",
        model: Any = None,
        preprocess: Any = None,
        tokenizer: Any = None,
    ) -> None:
        if not isinstance(model_name, str) or not model_name.strip():
            raise ValueError("model_name must be a non-empty open_clip model name or 'local-dir:/path'")
        if model_name.startswith("hf-hub:"):
            raise ValueError(
                f"model_name {model_name!r} would download from the Hugging Face hub; download the weights yourself "
                "and pass model_name='local-dir:/path' or pretrained='/path/to/weights'"
            )
        if model_name.startswith("local-dir:") and not Path(model_name[len("local-dir:") :]).is_dir():
            raise FileNotFoundError(f"model_name: no directory {model_name[len('local-dir:') :]!r}")
        if pretrained is not None and not Path(pretrained).is_file():
            raise ValueError(
                f"pretrained must be a local weights file (nothing is downloaded), got {str(pretrained)!r}, "
                "which does not exist"
            )
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be a probability in [0, 1], got {threshold!r}")
        if not isinstance(prompt, str) or prompt.count("{}") != 1:
            raise ValueError(f"prompt must hold exactly one '{{}}' for the object name, got {prompt!r}")
        crop_boxes(8, 8, grid=grid, overlap=overlap)  # validates grid and overlap
        super().__init__(threshold=threshold)
        try:
            import open_clip
            import torch
        except ImportError as err:  # pragma: no cover - exercised only without the extra
            raise ImportError(
                "OpenCLIPDetector needs torch and open_clip_torch: pip install 'nips25-commono[clip]'"
            ) from err
        self._torch = torch
        if model is None:
            model, _, preprocess = open_clip.create_model_and_transforms(
                model_name, pretrained=None if pretrained is None else str(pretrained), device=device
            )
            tokenizer = open_clip.get_tokenizer(model_name)
        elif preprocess is None or tokenizer is None:
            raise ValueError("model, preprocess and tokenizer must be given together")
        self.model = model.eval()
        self.preprocess = preprocess
        self.tokenizer = tokenizer
        self.grid, self.overlap, self.prompt = grid, overlap, prompt
        self.background_prompt = background_prompt
        self.device = device
        self.model_name = model_name
        self._text: dict[str, np.ndarray] = {}

    def _text_features(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in texts if t not in self._text]
        if todo:
            with self._torch.no_grad():
                tokens = self.tokenizer(todo).to(self.device)
                feats = self.model.encode_text(tokens, normalize=True).float().cpu().numpy()
            for t, f in zip(todo, feats):
                self._text[t] = f
        return np.stack([self._text[t] for t in texts])

    def image_features(self, image: Image.Image) -> np.ndarray:
        """``(n_crops, D)`` unit embeddings of the whole image and its crops."""
        img = as_image(image)
        batch = self._torch.stack(
            [self.preprocess(img.crop(b)) for b in crop_boxes(*img.size, grid=self.grid, overlap=self.overlap)]
        ).to(self.device)
        with self._torch.no_grad():
            return self.model.encode_image(batch, normalize=True).float().cpu().numpy()

    def presence(self, image: Image.Image, names: Sequence[str]) -> np.ndarray:
        """Max over crops of the softmax probability of each name (see the class docstring).

        Returns:
            ``(len(names),)`` probabilities in ``[0, 1]``.
        """
        if len(names) == 0:
            return np.zeros(0)
        texts = [self.prompt.format(n) for n in names]
        if self.background_prompt is not None:
            texts.append(self.background_prompt)
        txt = self._text_features(texts)
        img = self.image_features(image)
        scale = float(self.model.logit_scale.exp().item()) if hasattr(self.model, "logit_scale") else 100.0
        logits = scale * img @ txt.T
        logits -= logits.max(axis=1, keepdims=True)
        prob = np.exp(logits)
        prob /= prob.sum(axis=1, keepdims=True)
        return prob[:, : len(names)].max(axis=0)
