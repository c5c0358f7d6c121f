"""Provenance of gcg_res_reference.json: runs the official evaluator on the fixture, once, outside the repository.

Usage (in a scratch directory holding ``official/projects/llava_sam2/evaluation/eval_gcg_metrics_demo.py`` from
sunye23/SAMA@7c75e44, with opencv, scikit-learn, scikit-image, pycocotools, pycocoevalcap and Java)::

    python official_gcg_reference.py OFFICIAL_FILE FIXTURE_ROOT

It runs ``main()`` -> ``evaluate_all_metrics()`` with ``--eval_miou --eval_recall --eval_caption``. Patches, none
inside the scoring rules: bert-base-uncased (not downloadable offline) -> exact phrase match; ``from numpy import
np`` (an ImportError in the release) -> ``import numpy as np``; the CLAIR import stubbed (not called); SPICE
(downloads Stanford CoreNLP) stubbed out of ``COCOEvalCap``; the stub ``ValGCGDataset``'s length set to the folder
count. Prints the per-video values and the caption dict of ``eval_caption_quality``.
"""

import json
import os
import re
import sys
import types
from pathlib import Path


class _Stub:
    @staticmethod
    def from_pretrained(name):
        return None


class _NoSpice:
    def compute_score(self, gts, res):
        return float("nan"), []

    def method(self):
        return "SPICE"


def main() -> None:
    official, root = sys.argv[1], sys.argv[2]
    src = Path(official).read_text()
    assert src.count("from numpy import np") == 1
    src = src.replace("from numpy import np", "import numpy as np")
    pkgs = ("projects", "projects.llava_sam2", "projects.llava_sam2.evaluation", "projects.llava_sam2.evaluation.utils")
    for name in pkgs:
        sys.modules[name] = types.ModuleType(name)
    clair = types.ModuleType("clair_stub")
    clair.clair = None
    sys.modules["projects.llava_sam2.evaluation.utils.clair"] = clair
    tf = types.ModuleType("transformers")
    tf.AutoTokenizer = tf.AutoModel = _Stub
    sys.modules["transformers"] = tf
    import pycocoevalcap.eval as ce

    ce.Spice = _NoSpice
    mod = types.ModuleType("official_eval")
    exec(compile(src, "eval_gcg_metrics_demo.py", "exec"), mod.__dict__)
    mod.text_similarity_bert = lambda a, b: float(a == b)
    n = len([d for d in os.listdir(os.path.join(root, "video_gcg")) if re.fullmatch(r"\d{6}", d)])
    mod.ValGCGDataset.__len__ = lambda self: n
    captured, per_video = {}, {"miou": [], "matches": [], "n_gt": []}
    orig_cap, orig_miou, orig_fbm = mod.eval_caption_quality, mod.compute_miou, mod.find_best_matches

    def cap(g, p):
        captured["captions"] = orig_cap(g, p)
        return captured["captions"]

    def miou(p, g):
        v = orig_miou(p, g)
        per_video["miou"].append(float(v))
        return v

    def fbm(gm, gl, pm, pl, **kw):
        m = orig_fbm(gm, gl, pm, pl, **kw)
        per_video["matches"].append(len(m))
        per_video["n_gt"].append(len(gl))
        return m

    mod.eval_caption_quality, mod.compute_miou, mod.find_best_matches = cap, miou, fbm
    sys.argv = ["x", "--vis_save_path", root, "--eval_miou", "--eval_recall", "--eval_caption"]
    mod.main()
    print("PERVIDEO", json.dumps(per_video))
    print("CAPTURED", json.dumps({k: v for k, v in captured["captions"].items() if k != "SPICE"}))


if __name__ == "__main__":
    main()
