"""The brief's ``digits-transfer`` task: an MLP pretrained on digits 0-4, adapted few-shot to digits 5-9.

Experiment code (not part of the method's API). The data are scikit-learn's bundled 8x8 digits (1,797 images, UCI
optdigits test set; shipped inside the scikit-learn wheel, nothing is downloaded). The network is pretrained in
the package, so the target layers hold features that transfer, and the new 5-way head is warmed up by a linear
probe on the frozen features before any gradient pass: GoRA's gradient then points along what adaptation needs,
not along the noise of a random head.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from transformers.modeling_outputs import SequenceClassifierOutput

__all__ = [
    "DIGITS_TARGETS",
    "SHIFTS",
    "DigitsNet",
    "DigitsTransfer",
    "linear_probe",
    "load_digits_shift",
    "load_digits_transfer",
    "pretrain",
    "shift_pixels",
]

#: The hidden layers GoRA and the LoRA family adapt (4 matrices: 128x64 and three 128x128).
DIGITS_TARGETS: tuple[str, ...] = ("fc1", "fc2", "fc3", "fc4")


#: The fixed domain shifts of :func:`shift_pixels` (README, 0.2.5: the shifted-domain task).
SHIFTS: tuple[str, ...] = ("invert", "hflip", "vflip", "translate")
#: Pixels moved right by the ``translate`` shift (zero fill on the left).
TRANSLATE_PIXELS = 2


class DigitsNet(nn.Module):
    """MLP ``64 -> 128 -> 128 -> 128 -> 128 -> num_labels`` (tanh), Hugging-Face-style ``forward``.

    ``forward(pixels, labels=None)`` takes ``pixels`` of shape ``(batch, 64)`` (float32 in [0, 1]) and returns a
    ``SequenceClassifierOutput`` with ``logits`` ``(batch, num_labels)`` and the cross-entropy ``loss`` when
    ``labels`` (``(batch,)`` int64) is given.

    Example:
        >>> net = DigitsNet(num_labels=5)
        >>> net(torch.zeros(2, 64), labels=torch.tensor([0, 1])).logits.shape
        torch.Size([2, 5])
    """

    def __init__(self, *, num_labels: int, hidden: int = 128) -> None:
        super().__init__()
        if num_labels < 2:
            raise ValueError(f"num_labels must be >= 2, got {num_labels}")
        self.fc1 = nn.Linear(64, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, hidden)
        self.fc4 = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, num_labels)

    def features(self, pixels: torch.Tensor) -> torch.Tensor:
        """Hidden features ``(batch, hidden)`` before the head."""
        h = pixels
        for layer in (self.fc1, self.fc2, self.fc3, self.fc4):
            h = torch.tanh(layer(h))
        return h

    def forward(self, pixels: torch.Tensor, labels: torch.Tensor | None = None) -> SequenceClassifierOutput:
        logits = self.classifier(self.features(pixels))
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)


@dataclass(frozen=True)
class DigitsTransfer:
    """Pretraining data (digits 0-4) and the few-shot target task (digits 5-9, labels 0-4).

    Every split is a dict with ``pixels`` ``(n, 64)`` float32 and ``labels`` ``(n,)`` int64.
    """

    source: dict[str, torch.Tensor]
    train: dict[str, torch.Tensor]
    val: dict[str, torch.Tensor]
    test: dict[str, torch.Tensor]


def shift_pixels(pixels: torch.Tensor, kind: str) -> torch.Tensor:
    """Apply the fixed domain shift ``kind`` to flattened 8x8 images.

    ``invert``: ``1 - x``; ``hflip`` / ``vflip``: mirror left-right / top-bottom; ``translate``: move every image
    :data:`TRANSLATE_PIXELS` columns to the right, zero fill on the left (the rightmost columns drop out).

    Args:
        pixels: ``(n, 64)`` float, row-major 8x8 images with values in [0, 1].
        kind: one of :data:`SHIFTS`.

    Returns:
        ``(n, 64)`` float tensor, a new tensor (``pixels`` is not modified).

    Raises:
        ValueError: if ``kind`` is not in :data:`SHIFTS` or ``pixels`` is not ``(n, 64)``.

    Example:
        >>> shift_pixels(torch.zeros(1, 64), "invert").min().item()
        1.0
    """
    if kind not in SHIFTS:
        raise ValueError(f"kind must be one of {SHIFTS}, got {kind!r}")
    if pixels.ndim != 2 or pixels.shape[1] != 64:
        raise ValueError(f"pixels must have shape (n, 64), got {tuple(pixels.shape)}")
    if kind == "invert":
        return 1.0 - pixels
    images = pixels.reshape(-1, 8, 8)
    if kind == "hflip":
        return images.flip(-1).reshape(-1, 64)
    if kind == "vflip":
        return images.flip(-2).reshape(-1, 64)
    moved = torch.zeros_like(images)
    moved[:, :, TRANSLATE_PIXELS:] = images[:, :, :-TRANSLATE_PIXELS]
    return moved.reshape(-1, 64)


def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    try:
        from sklearn.datasets import load_digits
    except ModuleNotFoundError as err:  # pragma: no cover - the data extra holds it
        raise ModuleNotFoundError("digits-transfer needs scikit-learn: pip install 'nips25-gora[data]'") from err
    bunch = load_digits()
    return torch.tensor(bunch.data, dtype=torch.float32) / 16.0, torch.tensor(bunch.target, dtype=torch.int64)


def _split(x: torch.Tensor, y: torch.Tensor, digits: range, *, shots: int, n_val: int, seed: int,
           source: dict[str, torch.Tensor]) -> DigitsTransfer:  # fmt: skip
    """``shots`` / ``n_val`` / the rest per digit of ``digits`` (labels ``digit - digits.start``), seeded draw."""
    if shots < 1 or n_val < 1:
        raise ValueError(f"shots and n_val must be >= 1, got shots={shots}, n_val={n_val}")
    gen = torch.Generator().manual_seed(seed)
    parts: dict[str, list[torch.Tensor]] = {"train": [], "val": [], "test": []}
    for digit in digits:
        idx = torch.nonzero(y == digit).flatten()
        idx = idx[torch.randperm(len(idx), generator=gen)]
        if len(idx) <= shots + n_val:
            raise ValueError(f"shots + n_val = {shots + n_val} leaves no test image of digit {digit} ({len(idx)})")
        parts["train"].append(idx[:shots])
        parts["val"].append(idx[shots : shots + n_val])
        parts["test"].append(idx[shots + n_val :])
    return DigitsTransfer(
        source=source,
        **{k: {"pixels": x[torch.cat(v)], "labels": y[torch.cat(v)] - digits.start} for k, v in parts.items()},
    )


def load_digits_shift(*, kind: str, shots: int, n_val: int = 20, seed: int = 0) -> DigitsTransfer:
    """The shifted-domain task: pretrain on digits 0-4 as they are, adapt to the same digits under ``kind``.

    ``source`` is every image of digits 0-4 unshifted (the same tensor as :func:`load_digits_transfer`'s, so a
    seed's pretraining is shared); ``train`` / ``val`` / ``test`` hold ``shots`` / ``n_val`` / the rest of the
    images of each digit 0-4, shifted by :func:`shift_pixels`, labels = the digit (the pretrained head's classes).
    The unshifted originals of the target images are in the pretraining set: the task is the shift, not new
    images.

    Args:
        kind: one of :data:`SHIFTS`.
        shots: training images per class (few-shot), ``>= 1``.
        n_val: validation images per class, ``>= 1``.
        seed: seed of the draw of the target splits.

    Returns:
        A :class:`DigitsTransfer`.

    Raises:
        ValueError: if ``kind`` is unknown, or ``shots`` / ``n_val`` is < 1 or leaves no test image.
    """
    if kind not in SHIFTS:
        raise ValueError(f"kind must be one of {SHIFTS}, got {kind!r}")
    x, y = _digits()
    return _split(shift_pixels(x, kind), y, range(5), shots=shots, n_val=n_val, seed=seed, source=_source(x, y))


def _source(x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every image of digits 0-4, unshifted: the pretraining set of both tasks."""
    idx = torch.nonzero(y < 5).flatten()
    return {"pixels": x[idx], "labels": y[idx]}


def load_digits_transfer(*, shots: int, n_val: int = 20, seed: int = 0) -> DigitsTransfer:
    """Split scikit-learn's digits: all of 0-4 for pretraining; 5-9 into ``shots`` and ``n_val`` per class + test.

    Args:
        shots: training images per target class (few-shot), ``>= 1``.
        n_val: validation images per target class (for learning-rate search), ``>= 1``.
        seed: seed of the draw of the target splits.

    Returns:
        A :class:`DigitsTransfer`; target labels are ``digit - 5``.

    Raises:
        ValueError: if ``shots`` or ``n_val`` is < 1 or leaves no test image.
        ModuleNotFoundError: if scikit-learn is not installed (``pip install 'nips25-gora[data]'``).
    """
    x, y = _digits()
    return _split(x, y, range(5, 10), shots=shots, n_val=n_val, seed=seed, source=_source(x, y))


def _fit(params: list[nn.Parameter], loss_fn: Callable[[], torch.Tensor], *, steps: int, lr: float) -> None:
    opt = torch.optim.Adam(params, lr=lr)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss_fn().backward()
        opt.step()


def pretrain(data: dict[str, torch.Tensor], *, seed: int, steps: int = 300, lr: float = 3e-3) -> DigitsNet:
    """A :class:`DigitsNet` trained on the source digits (full batch Adam, ``steps`` steps); seeded init.

    Returns a 5-way network whose head is then replaced for the target task.
    """
    torch.manual_seed(seed)
    net = DigitsNet(num_labels=int(data["labels"].max()) + 1)
    _fit(list(net.parameters()), lambda: net(**data).loss, steps=steps, lr=lr)
    return net.eval()


def linear_probe(net: DigitsNet, data: dict[str, torch.Tensor], *, seed: int, steps: int = 200,
                 lr: float = 1e-2) -> DigitsNet:  # fmt: skip
    """Replace ``net``'s head by a new one trained on ``data`` with the body frozen (full batch Adam).

    Every arm of the experiment starts from this probe: the gradient GoRA reads is the adaptation's, not the
    random head's.
    """
    torch.manual_seed(seed)
    net.classifier = nn.Linear(net.classifier.in_features, int(data["labels"].max()) + 1)
    with torch.no_grad():
        feats = net.features(data["pixels"])
    head = net.classifier
    _fit(list(head.parameters()), lambda: nn.functional.cross_entropy(head(feats), data["labels"]), steps=steps,
         lr=lr)  # fmt: skip
    return net.eval()
