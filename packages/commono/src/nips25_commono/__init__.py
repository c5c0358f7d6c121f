"""nips25-commono: Common-O Bench tooling (Ross et al., "What's in Common? Multimodal Models Hallucinate When
Reasoning Across Scenes", NeurIPS 2025): questions, prompts, answer parsing, scoring, a scene generator on real
emoji pictures, weight-free baselines and open_clip / Hugging Face model adapters from local weights.
"""

from importlib.metadata import PackageNotFoundError, version

from nips25_commono.dataset import ColumnMap, load_common_o, load_predictions, save_predictions, write_common_o
from nips25_commono.detection import PerImageDetector, TemplateMatcher, normalized_cross_correlation
from nips25_commono.example import CONTROL_NONE_OPTION, NONE_OPTION, Example, as_image
from nips25_commono.hf import HFVisionLanguageModel
from nips25_commono.library import DEFAULT_EMOJI_FONT, EmojiLibrary, ObjectLibrary, ProceduralLibrary
from nips25_commono.models import AllOptions, Model, NoisyOracle, NoneOption, Oracle, RandomGuess
from nips25_commono.openclip import OpenCLIPDetector, crop_boxes
from nips25_commono.prompt import CONTROL_TEMPLATE, DEFAULT_TEMPLATE, format_answer, format_prompt, parse_answer
from nips25_commono.scene import Placement, Scene, SceneConfig, SceneGenerator, control_example
from nips25_commono.scoring import ScoreReport, bootstrap_difference, evaluate, score

try:
    __version__ = version("nips25-commono")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installation
    __version__ = "0.0.0"

__all__ = [
    "CONTROL_NONE_OPTION",
    "CONTROL_TEMPLATE",
    "DEFAULT_EMOJI_FONT",
    "DEFAULT_TEMPLATE",
    "NONE_OPTION",
    "AllOptions",
    "ColumnMap",
    "EmojiLibrary",
    "Example",
    "HFVisionLanguageModel",
    "Model",
    "NoisyOracle",
    "NoneOption",
    "ObjectLibrary",
    "OpenCLIPDetector",
    "Oracle",
    "PerImageDetector",
    "Placement",
    "ProceduralLibrary",
    "RandomGuess",
    "Scene",
    "SceneConfig",
    "SceneGenerator",
    "ScoreReport",
    "TemplateMatcher",
    "__version__",
    "as_image",
    "bootstrap_difference",
    "control_example",
    "crop_boxes",
    "evaluate",
    "format_answer",
    "format_prompt",
    "load_common_o",
    "load_predictions",
    "normalized_cross_correlation",
    "parse_answer",
    "save_predictions",
    "score",
    "write_common_o",
]
