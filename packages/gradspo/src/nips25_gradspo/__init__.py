"""nips25-gradspo: GradSPO, stepwise preference optimisation of diffusion models read as gradient guidance.

Tee, Yoon, Syarubany, Yoon, Yoo, "A Gradient Guidance Perspective on Stepwise Preference Optimization for
Diffusion Models", NeurIPS 2025 (OpenReview d6lIOnvOX2). SPO and Diffusion-DPO share the same harness.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_gradspo.candidates import antithetic_noise, ddim_candidates, ddim_mean, select_pair, validity_margin
from nips25_gradspo.denoisers import ClassDenoiser, Cond, Denoiser, TextDenoiser, index_cond, repeat_cond
from nips25_gradspo.diagnostics import gradient_relative_variance, mmd2, paired_gradient_variance
from nips25_gradspo.digits import (
    NULL_CLASS,
    DigitsSplit,
    digits_scheduler,
    digits_unet,
    load_digits,
    load_digits_unet,
    pretrain_digits_unet,
)
from nips25_gradspo.ema import EMA
from nips25_gradspo.lora import SD_TARGETS, adapters_disabled, add_unet_lora, lora_parameters, save_lora
from nips25_gradspo.objectives import clipped_ratio_loss, diffusion_dpo_loss, gradspo_loss, spo_loss
from nips25_gradspo.pipelines import encode_prompts, latent_shape, load_sd_pipeline
from nips25_gradspo.reward import (
    DigitReward,
    NoisyDigitClassifier,
    StepAwareReward,
    load_noisy_classifier,
    train_noisy_classifier,
)
from nips25_gradspo.schedule import DDIMCoefficients, Method, ddim_coefficients, step_weights
from nips25_gradspo.trainer import PairBatch, StepwiseTrainer, TrainerConfig

try:
    __version__ = version("nips25-gradspo")
except PackageNotFoundError:  # pragma: no cover - source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "EMA",
    "NULL_CLASS",
    "SD_TARGETS",
    "ClassDenoiser",
    "Cond",
    "DDIMCoefficients",
    "Denoiser",
    "DigitReward",
    "DigitsSplit",
    "Method",
    "NoisyDigitClassifier",
    "PairBatch",
    "StepAwareReward",
    "StepwiseTrainer",
    "TextDenoiser",
    "TrainerConfig",
    "__version__",
    "adapters_disabled",
    "add_unet_lora",
    "antithetic_noise",
    "clipped_ratio_loss",
    "ddim_candidates",
    "ddim_coefficients",
    "ddim_mean",
    "diffusion_dpo_loss",
    "digits_scheduler",
    "digits_unet",
    "encode_prompts",
    "gradient_relative_variance",
    "gradspo_loss",
    "index_cond",
    "latent_shape",
    "load_digits",
    "load_digits_unet",
    "load_noisy_classifier",
    "load_sd_pipeline",
    "lora_parameters",
    "mmd2",
    "paired_gradient_variance",
    "pretrain_digits_unet",
    "repeat_cond",
    "save_lora",
    "select_pair",
    "spo_loss",
    "step_weights",
    "train_noisy_classifier",
    "validity_margin",
]
