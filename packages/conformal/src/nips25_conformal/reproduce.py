"""Headline experiment: class-conditional coverage and set size of aggregated multi-view conformal sets.

Two real inputs: JapaneseVowels (views = different utterances of the same speaker) and scikit-learn's digits
(views = independently rotated/shifted images of the same digit). Over random splits into train / calibration /
test per class, instances of m in {1, 3, 5} views are formed from test points of one class, and every exact-law
aggregator and classical rule is scored by per-class coverage and mean set size at alpha = 0.1. A stress case
(m transformations of the *same* digit image: correlated, non-exchangeable views) is reported, not claimed.
"""

from __future__ import annotations

import itertools
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nips25_conformal.aggregation import NullDistribution
from nips25_conformal.classifier import multi_input_pvalues
from nips25_conformal.datasets import japanese_vowels_features, load_japanese_vowels, transform_digits
from nips25_conformal.exchangeability import exchangeability_diagnostic
from nips25_conformal.pvalues import MondrianCalibration
from nips25_shared import Claim, Report, get_logger, progress, seed_everything

__all__ = ["EXACT", "RULES", "ExperimentConfig", "reproduce", "run_experiment"]

TITLE = "Class conditional conformal prediction for multiple inputs by p-value aggregation"
EXACT = ("sum", "fisher", "min", "majority_refined", "quantile_envelope", "area_envelope", "distance_envelope")
RULES = ("single", "union", "intersection", "bonferroni", "majority_naive")
VALID = (*EXACT, "single", "union", "bonferroni", "majority_naive")  # every method with a coverage guarantee
SHRINKERS = ("sum", "fisher", "quantile_envelope")  # claim 2: the paper's informative exact-law aggregators
Z = 3.5  # coverage tolerance in standard errors over splits (fixed before running)
log = get_logger(__name__)


@dataclass(frozen=True)
class ExperimentConfig:
    """One dataset's split sizes (per class), number of views and repetitions."""

    dataset: str
    n_train: int
    n_cal: int
    n_splits: int
    instances_per_class: int = 20
    views: tuple[int, ...] = (1, 3, 5)
    alpha: float = 0.1
    n_mc: int = 20_000

    def __post_init__(self) -> None:
        if self.dataset not in ("japanese_vowels", "digits"):
            raise ValueError(f"dataset must be 'japanese_vowels' or 'digits', got {self.dataset!r}")
        for name in ("n_train", "n_cal", "n_splits", "instances_per_class", "n_mc"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.views or min(self.views) < 1:
            raise ValueError(f"views must be non-empty positive ints, got {self.views}")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")


PROFILES: dict[str, tuple[ExperimentConfig, ...]] = {
    "tiny": (
        ExperimentConfig("japanese_vowels", n_train=10, n_cal=25, n_splits=2, instances_per_class=5, n_mc=2000),
        ExperimentConfig("digits", n_train=30, n_cal=50, n_splits=2, instances_per_class=5, n_mc=2000),
    ),
    "quick": (
        ExperimentConfig("japanese_vowels", n_train=10, n_cal=25, n_splits=60),
        ExperimentConfig("digits", n_train=30, n_cal=50, n_splits=30),
    ),
    "paper": (
        ExperimentConfig("japanese_vowels", n_train=10, n_cal=25, n_splits=200),
        ExperimentConfig("digits", n_train=30, n_cal=50, n_splits=200),
    ),
}


def _load(config: ExperimentConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Features (N, D), labels (N,), and for digits the raw images (N, 8, 8) for the stress case."""
    if config.dataset == "japanese_vowels":
        X, y = japanese_vowels_features()
        return X[:, :12], y, None  # base model input: the 12 per-coefficient means (deliberately modest)
    from sklearn.datasets import load_digits

    digits = load_digits()
    return transform_digits(digits.images, rng=rng), digits.target.astype(np.int64), digits.images


def _split_per_class(
    y: np.ndarray, classes: np.ndarray, config: ExperimentConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Per class, a random ``n_train`` / ``n_cal`` / rest split: (train indices, calibration indices, test lists)."""
    train, cal, test = [], [], []
    for c in classes:
        idx = rng.permutation(np.flatnonzero(y == c))
        train.append(idx[: config.n_train])
        cal.append(idx[config.n_train : config.n_train + config.n_cal])
        test.append(idx[config.n_train + config.n_cal :])
    return np.concatenate(train), np.concatenate(cal), test


def run_experiment(config: ExperimentConfig, *, seed: int) -> dict[str, Any]:
    """Run one dataset's splits; return per-method, per-m arrays of per-class coverage and mean size.

    Returns:
        ``{"coverage": {method: {m: (S, C)}}, "size": {method: {m: (S,)}}, "stress": {...}, "classes": (C,)}``.
    """
    from sklearn.naive_bayes import GaussianNB

    rng = np.random.default_rng(seed)
    X, y, images = _load(config, rng)
    classes = np.unique(y)
    methods = (*EXACT, *RULES)
    cov: dict[str, dict[int, list[np.ndarray]]] = {a: {m: [] for m in config.views} for a in methods}
    size: dict[str, dict[int, list[float]]] = {a: {m: [] for m in config.views} for a in methods}
    stress_cov: dict[int, list[np.ndarray]] = {m: [] for m in config.views if m > 1 and images is not None}
    stress_atc: dict[int, list[np.ndarray]] = {m: [] for m in stress_cov}
    cache: dict[tuple[Any, ...], NullDistribution] = {}
    diagnostic: dict[str, float] = {}
    for split in progress(range(config.n_splits), total=config.n_splits, desc=config.dataset):
        tr, ca, test = _split_per_class(y, classes, config, rng)
        model = GaussianNB().fit(X[tr], y[tr])
        proba_cal = model.predict_proba(X[ca])
        calib = MondrianCalibration.from_scores(
            1.0 - proba_cal[np.arange(ca.size), np.searchsorted(classes, y[ca])], y[ca], classes
        )
        scores = {int(i): s for i, s in zip(np.concatenate(test), 1.0 - model.predict_proba(X[np.concatenate(test)]))}
        for m in config.views:
            groups = np.stack(
                [rng.choice(t, size=m, replace=False) for t in test for _ in range(config.instances_per_class)]
            )
            labels = np.repeat(classes, config.instances_per_class)
            view_scores = np.stack([[scores[int(i)] for i in g] for g in groups])  # (B, m, C)
            col = np.searchsorted(classes, labels)
            for a in methods:
                p = multi_input_pvalues(
                    calib, view_scores, aggregation=a, n_mc=config.n_mc, random_state=seed, null_cache=cache
                )
                sets = p > config.alpha
                hit = sets[np.arange(labels.size), col]
                cov[a][m].append(np.array([hit[labels == c].mean() for c in classes]))
                size[a][m].append(float(sets.sum(axis=1).mean()))
            if images is not None and m > 1:  # stress: m transformations of one test image (correlated views)
                base = np.array([rng.choice(t) for t in test for _ in range(config.instances_per_class)])
                views = np.stack([transform_digits(images[base], rng=rng) for _ in range(m)], axis=1)
                v_scores = 1.0 - model.predict_proba(views.reshape(-1, views.shape[-1])).reshape(len(base), m, -1)
                p = multi_input_pvalues(calib, v_scores, aggregation="sum", random_state=seed, null_cache=cache)
                hit = (p > config.alpha)[np.arange(base.size), col]
                stress_cov[m].append(np.array([hit[labels == c].mean() for c in classes]))
                # aggregate-then-calibrate on the same test instances: calibration instances are m transforms of
                # each calibration image, scores averaged over views (own generator: the other arms are unchanged)
                atc_rng = np.random.default_rng([seed, split, m])
                cal_views = np.stack([transform_digits(images[ca], rng=atc_rng) for _ in range(m)], axis=1)
                cal_scores = 1.0 - model.predict_proba(cal_views.reshape(-1, cal_views.shape[-1])).reshape(
                    ca.size, m, -1
                ).mean(axis=1)
                atc = MondrianCalibration.from_scores(
                    cal_scores[np.arange(ca.size), np.searchsorted(classes, y[ca])], y[ca], classes
                )
                hit = (atc.pvalues(v_scores.mean(axis=1)) > config.alpha)[np.arange(base.size), col]
                stress_atc[m].append(np.array([hit[labels == c].mean() for c in classes]))
                if split == 0 and m == max(config.views):  # permutation diagnostic on both kinds of views
                    rows = np.arange(labels.size)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", UserWarning)
                        for kind, vs in (("distinct_images", view_scores), ("same_image", v_scores)):
                            res = exchangeability_diagnostic(
                                list(vs[rows, :, col]), labels, n_permutations=199, rng=rng
                            )
                            diagnostic[kind] = round(res.p_value, 4)
        log.debug("split %d done", split)
    return {
        "classes": classes,
        "coverage": {a: {m: np.array(v) for m, v in d.items()} for a, d in cov.items()},
        "size": {a: {m: np.array(v) for m, v in d.items()} for a, d in size.items()},
        "stress": {m: np.array(v) for m, v in stress_cov.items()},
        "stress_aggregate_then_calibrate": {m: np.array(v) for m, v in stress_atc.items()},
        "diagnostic": diagnostic,
    }


def run_frames_as_views(config: ExperimentConfig, *, seed: int) -> dict[int, dict[str, np.ndarray]]:
    """JapaneseVowels with frames of one utterance as the views (correlated views; see the README's design).

    The base model is a GaussianNB on single frames of the training utterances; the method calibrates on one frame
    per calibration utterance, aggregate-then-calibrate on m-frame instances of the calibration utterances.

    Returns:
        ``{m: {"sum": (S, C), "aggregate_then_calibrate": (S, C)}}`` per-class coverage per split, for every
        ``m > 1`` of ``config.views``.
    """
    from sklearn.naive_bayes import GaussianNB

    series, y = load_japanese_vowels()
    classes = np.unique(y)
    col_of = {int(c): j for j, c in enumerate(classes)}
    multi = [m for m in config.views if m > 1]
    out: dict[int, dict[str, list[np.ndarray]]] = {m: {"sum": [], "aggregate_then_calibrate": []} for m in multi}
    cache: dict[tuple[Any, ...], NullDistribution] = {}
    for split in range(config.n_splits):
        rng = np.random.default_rng([seed, 7, split])  # its own stream: the other arms are unchanged
        tr, ca, test = _split_per_class(y, classes, config, rng)
        frames = np.concatenate([series[i] for i in tr])
        model = GaussianNB().fit(frames, np.concatenate([np.full(len(series[i]), y[i]) for i in tr]))
        y_cal = y[ca]
        cal_cols = np.array([col_of[int(c)] for c in y_cal])
        one = np.stack([series[i][rng.integers(len(series[i]))] for i in ca])
        calib = MondrianCalibration.from_scores(
            1.0 - model.predict_proba(one)[np.arange(ca.size), cal_cols], y_cal, classes
        )
        labels = np.repeat(classes, config.instances_per_class)
        cols = np.array([col_of[int(c)] for c in labels])
        for m in multi:
            base = np.array([rng.choice(t) for t in test for _ in range(config.instances_per_class)])
            views = np.stack([series[i][rng.choice(len(series[i]), size=m, replace=False)] for i in base])
            v_scores = 1.0 - model.predict_proba(views.reshape(-1, views.shape[-1])).reshape(base.size, m, -1)
            p = multi_input_pvalues(calib, v_scores, aggregation="sum", random_state=seed, null_cache=cache)
            hit = (p > config.alpha)[np.arange(base.size), cols]
            out[m]["sum"].append(np.array([hit[labels == c].mean() for c in classes]))
            cal_views = np.stack([series[i][rng.choice(len(series[i]), size=m, replace=False)] for i in ca])
            cal_scores = 1.0 - model.predict_proba(cal_views.reshape(-1, cal_views.shape[-1])).reshape(
                ca.size, m, -1
            ).mean(axis=1)
            atc = MondrianCalibration.from_scores(cal_scores[np.arange(ca.size), cal_cols], y_cal, classes)
            hit = (atc.pvalues(v_scores.mean(axis=1)) > config.alpha)[np.arange(base.size), cols]
            out[m]["aggregate_then_calibrate"].append(np.array([hit[labels == c].mean() for c in classes]))
    return {m: {k: np.array(v) for k, v in d.items()} for m, d in out.items()}


def _coverage_check(result: dict[str, Any], methods: tuple[str, ...], alpha: float) -> tuple[bool, dict[str, float]]:
    """Every class of every method and m: mean coverage >= 1 - alpha - Z * SE (SE over splits)."""
    ok, worst = True, {}
    for a in methods:
        margins = []
        for covs in result["coverage"][a].values():
            mean = covs.mean(axis=0)
            se = covs.std(axis=0, ddof=1) / np.sqrt(covs.shape[0]) if covs.shape[0] > 1 else np.zeros_like(mean)
            ok &= bool(np.all(mean >= 1 - alpha - Z * se))
            margins.append(float(mean.min()))
        worst[a] = round(min(margins), 4)
    return ok, worst


def _mean_sizes(result: dict[str, Any]) -> dict[str, dict[int, float]]:
    return {a: {m: round(float(v.mean()), 4) for m, v in d.items()} for a, d in result["size"].items()}


def _claims(name: str, config: ExperimentConfig, result: dict[str, Any], note: str) -> list[Claim]:
    alpha, views = config.alpha, sorted(config.views)
    multi = [m for m in views if m > 1]
    sizes = _mean_sizes(result)
    cov_ok, cov_worst = _coverage_check(result, VALID, alpha)
    shrink = all(all(sizes[a][lo] > sizes[a][hi] for lo, hi in itertools.pairwise(views)) for a in SHRINKERS)
    below = all(sizes[a][m] < sizes[b][m] for a in SHRINKERS for b in ("single", "union", "bonferroni") for m in multi)
    maj_ok, maj_worst = _coverage_check(result, ("majority_refined",), alpha)
    maj_small = all(sizes["majority_refined"][m] < sizes["majority_naive"][m] for m in multi)
    return [
        Claim(
            id=f"coverage-{name}",
            statement="Every aggregator keeps class-conditional coverage >= 1 - alpha for every class.",
            paper="P(y in C | Y = y) >= 1 - alpha for all y (Sec. 3, exchangeable views)",
            measured={"worst_class_coverage": cov_worst, "alpha": alpha},
            criterion=f"for every valid method, m in {views} and class: mean coverage over splits >= 1 - alpha - "
            f"{Z} SE (SE: sd over splits / sqrt(splits))",
            holds=cov_ok,
            scale_note=note,
        ),
        Claim(
            id=f"size-shrinks-{name}",
            statement="Aggregated sets shrink as m grows and are smaller than the single-view, union and "
            "Bonferroni-intersection sets.",
            paper="aggregated sets are smaller at the same coverage (no number retrieved)",
            measured=sizes,
            criterion=f"for {SHRINKERS}: size strictly decreasing over m in {views}; and for m in {multi} "
            "size < single, union and Bonferroni intersection",
            holds=bool(shrink and below),
            scale_note=note,
        ),
        Claim(
            id=f"majority-refined-{name}",
            statement="The refined majority vote keeps coverage with smaller sets than the plain majority vote.",
            paper="refined majority vote valid at 1 - alpha, naive over-conservative under exchangeability",
            measured={
                "worst_class_coverage": maj_worst["majority_refined"],
                "size_refined": sizes["majority_refined"],
                "size_naive": sizes["majority_naive"],
            },
            criterion=f"refined: every class coverage >= 1 - alpha - {Z} SE; size < naive for every m in {multi}",
            holds=bool(maj_ok and maj_small),
            scale_note=note,
        ),
    ]


def _stress_claim(
    config: ExperimentConfig,
    result: dict[str, Any],
    *,
    claim_id: str = "aggregate-then-calibrate-correlated-views",
    views_are: str = "transformations of one image",
    scale_note: str | None = None,
) -> Claim:
    """Correlated views: instance-level calibration keeps coverage, per-view aggregation need not (not a paper claim).

    ``result`` holds ``"stress"`` (the method's ``sum``) and ``"stress_aggregate_then_calibrate"``, each
    ``{m: (splits, C)}`` per-class coverage. The method's arm is the positive control (it should under-cover).
    """

    def worst(arms: dict[int, np.ndarray]) -> tuple[dict[int, float], bool]:
        out, ok = {}, True
        for m, cov in arms.items():  # (splits, C)
            mean, se = cov.mean(axis=0), cov.std(axis=0, ddof=1) / np.sqrt(cov.shape[0]) if cov.shape[0] > 1 else 0.0
            out[m] = round(float(mean.min()), 4)
            ok = ok and bool(np.all(mean >= 1 - config.alpha - Z * se))
        return out, ok

    atc, atc_ok = worst(result["stress_aggregate_then_calibrate"])
    method, method_ok = worst(result["stress"])
    return Claim(
        id=claim_id,
        statement=f"When the views are {views_are} (not exchangeable), calibrating whole "
        "instances (aggregate-then-calibrate) keeps class-conditional coverage; aggregating single-view p-values "
        "(the method, sum) need not.",
        paper=None,
        measured={
            "worst_class_coverage_aggregate_then_calibrate": atc,
            "worst_class_coverage_sum": method,
            "sum_keeps_coverage": method_ok,
            "alpha": config.alpha,
        },
        criterion=f"aggregate-then-calibrate: every class, every m > 1: mean coverage over splits >= 1 - alpha - "
        f"{Z} SE (the same test as the coverage claims)",
        holds=atc_ok,
        scale_note=scale_note
        or f"digits, m transforms of one test image; calibration instances: m transforms of each of the "
        f"{config.n_cal} calibration images per class; {config.n_splits} splits. A baseline check, not the paper's.",
    )


def _figure(results: dict[str, dict[str, Any]], configs: dict[str, ExperimentConfig], out_dir: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(results), figsize=(6 * len(results), 8), squeeze=False)
    for j, (name, res) in enumerate(results.items()):
        views = sorted(configs[name].views)
        for a in (*EXACT, *RULES):
            style = "-o" if a in EXACT else "--x"
            axes[0, j].plot(views, [res["size"][a][m].mean() for m in views], style, label=a)
            axes[1, j].plot(views, [res["coverage"][a][m].mean(axis=0).min() for m in views], style, label=a)
        if res["stress"]:
            ms = sorted(res["stress"])
            axes[1, j].plot(ms, [res["stress"][m].mean(axis=0).min() for m in ms], ":k", label="sum, same image")
            atc = res["stress_aggregate_then_calibrate"]
            axes[1, j].plot(
                ms, [atc[m].mean(axis=0).min() for m in ms], ":^g", label="aggregate-then-calibrate, same image"
            )
        axes[1, j].axhline(1 - configs[name].alpha, color="grey", lw=0.8)
        axes[0, j].set(title=f"{name}: mean set size", xlabel="views m", ylabel="labels per set")
        axes[1, j].set(title=f"{name}: worst per-class coverage", xlabel="views m", ylabel="coverage")
    axes[0, 0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = out_dir / "set_size_coverage.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def reproduce(*, profile: str = "quick", seed: int = 0, out_dir: Path) -> Report:
    """Run the headline experiment on JapaneseVowels and digits; return the claims report.

    Args:
        profile: ``"quick"`` (60/30 splits), ``"paper"`` (200 splits each, the brief's CPU protocol) or ``"tiny"``.
        seed: seed of the splits, views and Monte Carlo laws.
        out_dir: folder for the figure.

    Returns:
        A :class:`nips25_shared.Report` with three claims per dataset.

    Raises:
        ValueError: for an unknown profile. ImportError: sktime (the ``data`` extra) is missing.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
    start = time.perf_counter()
    seed_everything(seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    configs = {c.dataset: c for c in PROFILES[profile]}
    notes = {
        "japanese_vowels": "JapaneseVowels (sktime's bundled UCI files): 9 speakers, views = distinct utterances of "
        "one speaker; GaussianNB on 12 mean LPC coefficients; paper: Pl@ntNet/LifeCLEF and Gaussian mixtures.",
        "digits": "scikit-learn digits, each view an independently rotated (+-15 deg) and shifted (+-1 px) image of "
        "the class; GaussianNB on pixels; paper: Pl@ntNet/LifeCLEF and Gaussian mixtures.",
    }
    results, claims = {}, []
    for name, config in configs.items():
        log.info("running %s (%d splits)", name, config.n_splits)
        results[name] = run_experiment(config, seed=seed)
        note = f"{notes[name]} n_cal={config.n_cal}/class, {config.n_splits} splits, alpha={config.alpha}."
        claims += _claims(name, config, results[name], note)
    if results.get("digits", {}).get("stress"):
        claims.append(_stress_claim(configs["digits"], results["digits"]))
    if "japanese_vowels" in configs:
        vowels = configs["japanese_vowels"]
        frames = run_frames_as_views(vowels, seed=seed)
        results["japanese_vowels"]["frames"] = frames
        claims.append(
            _stress_claim(
                vowels,
                {
                    "stress": {m: d["sum"] for m, d in frames.items()},
                    "stress_aggregate_then_calibrate": {m: d["aggregate_then_calibrate"] for m, d in frames.items()},
                },
                claim_id="aggregate-then-calibrate-frames-as-views",
                views_are="frames of one utterance",
                scale_note=f"JapaneseVowels, m distinct frames of one test utterance as views; GaussianNB on single "
                f"frames; the method calibrates on one frame per calibration utterance ({vowels.n_cal} per class), "
                f"aggregate-then-calibrate on m-frame instances of them; {vowels.n_splits} splits. A baseline check, "
                "not the paper's.",
            )
        )
    figure = _figure(results, configs, out_dir)
    digits = results.get("digits", {})
    stress = {m: round(float(v.mean(axis=0).min()), 4) for m, v in digits.get("stress", {}).items()}
    diag = digits.get("diagnostic", {})
    return Report(
        package="conformal",
        title=TITLE,
        profile=profile,
        seed=seed,
        config={name: asdict(c) for name, c in configs.items()},
        claims=claims,
        wall_time_s=time.perf_counter() - start,
        figures=[figure],
        notes="Stress case (not claimed): m transformations of the same digit image are correlated views; worst "
        f"per-class coverage of the sum aggregator per m: {stress}. Exchangeability is needed for the guarantee. "
        f"Permutation diagnostic (exchangeability_diagnostic, first split, largest m) p-values: {diag}.",
    )
