"""Evaluation: episode returns of a policy, video-normalised return, and the latent-action linear probe."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from nips25_bcvlr._validation import check_int, check_real

__all__ = ["evaluate_returns", "linear_probe", "normalized_return", "probe_r2"]


def evaluate_returns(
    predict: Callable[[np.ndarray], Any], envs: Sequence[gym.Env], *, n_episodes: int, seed: int = 10_000
) -> np.ndarray:
    """Return of ``n_episodes`` episodes, run in parallel over ``envs`` with a batched ``predict``.

    Episode ``i`` starts from ``env.reset(seed=seed + i)``, so every method meets the same start states. This is
    the evaluation, the one place that reads rewards (the training loops never do).

    Args:
        predict: ``(B, H, W, 3)`` uint8 observations to ``(B, ...)`` actions, or to ``(actions, state)`` as
            stable-baselines3's ``predict`` (``BCVLR.predict``, the baselines) returns them.
        envs: one or more envs of the same kind (they are reset here).
        n_episodes: episodes to run, ``>= 1``.
        seed: seed of the first episode.

    Returns:
        ``(n_episodes,)`` float returns.
    """
    check_int("n_episodes", n_episodes)
    if not envs:
        raise ValueError("envs must hold at least one env")
    returns = np.zeros(n_episodes)
    next_episode = 0
    active: dict[int, tuple[int, np.ndarray]] = {}  # env slot -> (episode, obs)
    for slot, env in enumerate(envs):
        if next_episode < n_episodes:
            active[slot] = (next_episode, env.reset(seed=seed + next_episode)[0])
            next_episode += 1
    while active:
        slots = sorted(active)
        out = predict(np.stack([active[s][1] for s in slots]))
        actions = np.asarray(out[0] if isinstance(out, tuple) else out)
        for a, slot in zip(actions, slots):
            episode, _ = active[slot]
            obs, r, terminated, truncated, _ = envs[slot].step(a)
            returns[episode] += float(r)
            if terminated or truncated:
                if next_episode < n_episodes:
                    active[slot] = (next_episode, envs[slot].reset(seed=seed + next_episode)[0])
                    next_episode += 1
                else:
                    del active[slot]
            else:
                active[slot] = (episode, obs)
    return returns


def normalized_return(returns: np.ndarray, video_returns: np.ndarray) -> float:
    """Video-normalised return: mean policy return divided by the mean return of the expert video's episodes.

    Raises:
        ValueError: if either array is empty or not finite, or the video's mean return is not positive.
    """
    r = np.asarray(returns, dtype=np.float64)
    v = np.asarray(video_returns, dtype=np.float64)
    for name, arr in (("returns", r), ("video_returns", v)):
        if arr.size == 0 or not np.isfinite(arr).all():
            raise ValueError(f"{name} must be a non-empty array of finite returns")
    check_real("mean(video_returns)", float(v.mean()), low=0.0, low_open=True)
    return float(r.mean() / v.mean())


def linear_probe(latents: np.ndarray, labels: np.ndarray, *, test_fraction: float = 0.3, seed: int = 0) -> float:
    """Held-out accuracy of a multinomial logistic regression from latent actions to true discrete actions.

    The probe (scikit-learn ``LogisticRegression`` on standardised latents) is fitted on a random
    ``1 - test_fraction`` of the transitions and scored on the rest (the paper's ``eval_latent_repr``).

    Args:
        latents: ``(M, d)`` latent actions.
        labels: ``(M,)`` integer true actions.
        test_fraction: held-out share in ``(0, 1)``.
        seed: split seed.

    Returns:
        Accuracy in ``[0, 1]``.

    Raises:
        ValueError: on shape mismatch, non-finite latents, fewer than 10 transitions or a single class.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = np.asarray(latents, dtype=np.float64)
    y = np.asarray(labels)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"latents must be (M, d) and labels (M,), got {x.shape} and {y.shape}")
    if x.shape[0] < 10 or not np.isfinite(x).all():
        raise ValueError(f"latents must hold >= 10 finite rows, got {x.shape[0]}")
    if np.unique(y).size < 2:
        raise ValueError("labels must contain at least two classes")
    check_real("test_fraction", test_fraction, low=0.0, high=1.0, low_open=True, high_open=True)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=y)
    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    return float(probe.fit(xtr, ytr).score(xte, yte))


def probe_r2(
    latents: np.ndarray, actions: np.ndarray, *, n_actions: int | None = None, test_fraction: float = 0.3, seed: int = 0
) -> float:
    r"""Held-out :math:`R^2` of a ridge regression from latent actions to true actions (the collapse diagnostic).

    :math:`R^2 = 1 - \sum (y - \hat y)^2 / \sum (y - \bar y)^2` over the held-out transitions, pooled over the
    action dimensions (scikit-learn's ``variance_weighted``); discrete actions are one-hot encoded. A collapsed
    latent (constant over the video) gives :math:`R^2 \le 0`; latents that determine the action linearly give 1.

    Args:
        latents: ``(M, d)`` latent actions.
        actions: ``(M,)`` integer actions (discrete) or ``(M, A)`` continuous actions.
        n_actions: number of discrete actions (one-hot width); ``None`` for continuous actions.
        test_fraction: held-out share in ``(0, 1)``.
        seed: split seed.

    Returns:
        The held-out :math:`R^2` (at most 1).

    Raises:
        ValueError: on shape mismatch, non-finite values or fewer than 10 transitions.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> a = rng.uniform(-1, 1, (200, 2))
        >>> round(probe_r2(np.hstack([a @ [[1.0, 2.0], [0.5, -1.0]], rng.normal(size=(200, 3))]), a), 3)
        1.0
    """
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = np.asarray(latents, dtype=np.float64)
    y = np.asarray(actions)
    if x.ndim != 2 or y.shape[:1] != x.shape[:1]:
        raise ValueError(f"latents must be (M, d) and actions (M, ...), got {x.shape} and {y.shape}")
    if x.shape[0] < 10 or not np.isfinite(x).all():
        raise ValueError(f"latents must hold >= 10 finite rows, got {x.shape[0]}")
    if n_actions is not None:
        check_int("n_actions", n_actions, minimum=2)
        y = np.eye(n_actions)[y.astype(np.int64)]
    y = y.reshape(len(y), -1).astype(np.float64)
    if not np.isfinite(y).all():
        raise ValueError("actions must be finite")
    check_real("test_fraction", test_fraction, low=0.0, high=1.0, low_open=True, high_open=True)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=test_fraction, random_state=seed)
    model = make_pipeline(StandardScaler(), Ridge(alpha=1.0)).fit(xtr, ytr)
    return float(r2_score(yte, model.predict(xte), multioutput="variance_weighted"))
