"""Evaluation: episode returns of a policy, video-normalised return, and the latent-action linear probe."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np

from nips25_bcvlr._validation import check_int, check_real

__all__ = ["evaluate_returns", "linear_probe", "normalized_return"]


def evaluate_returns(
    predict: Callable[[np.ndarray], np.ndarray], envs: Sequence[gym.Env], *, n_episodes: int, seed: int = 10_000
) -> np.ndarray:
    """Return of ``n_episodes`` episodes, run in parallel over ``envs`` with a batched ``predict``.

    Episode ``i`` starts from ``env.reset(seed=seed + i)``, so every method meets the same start states.

    Args:
        predict: ``(B, H, W, 3)`` uint8 observations to ``(B, ...)`` actions.
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
        actions = np.asarray(predict(np.stack([active[s][1] for s in slots])))
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
