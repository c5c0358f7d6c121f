r"""An oracle in the network's place: the exact posterior predictive of the trellis, for the positive control.

Under the Bayesian flow with a uniform prior over the rows, the beliefs :math:`\theta` are the per-row posteriors
given the sender's noisy observations, so the exact posterior predictive of row :math:`r` is

.. math::
    p_O(x_r = s \mid \theta) = \sum_T p(T \mid \text{leaves})\,\textstyle\prod_{r'} \theta_{r'}(x_{r'}(T))\,
    \mathbb 1[x_r(T) = s] \,/\, \text{norm},

a sum over the physically valid trees :math:`T` in their canonical tables :math:`x(T)` with the trellis posterior
:math:`p(T \mid \text{leaves})`. With this :math:`p_O` the BFN sampler draws exact posterior samples (up to the
sampler's discretisation), so the same measurement run on it shows what a perfect network would score.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from nips25_treegen.labelling import canonical_rows
from nips25_treegen.model import TreeGen, TreeGenConfig, row_layout
from nips25_treegen.trellis import Trellis

__all__ = ["PosteriorOracle"]


class PosteriorOracle(TreeGen):
    """A :class:`TreeGen` whose ``forward`` is the exact posterior predictive of one jet (N <= 8).

    Args:
        leaves: ``(N, 4)`` the jet's leaf four-momenta; ``sample`` must be called with these leaves.
        t_cut, lam, lam_root: Ginkgo parameters of the posterior.

    Raises:
        ValueError: for bad leaves or a jet with no valid tree or too many to enumerate.

    Example:
        >>> from nips25_treegen.ginkgo import simulate, tree_log_lik
        >>> jet = simulate(1, n_leaves=(5, 5), seed=0)[0]
        >>> trees = PosteriorOracle(jet.leaves).sample(jet.leaves, n_samples=4, n_steps=5)
        >>> all(np.isfinite(tree_log_lik(jet.leaves, p)) for p in trees)
        True
    """

    def __init__(self, leaves: Any, *, t_cut: float = 16.0, lam: float = 1.5, lam_root: float = 1.5) -> None:
        trellis = Trellis(leaves, t_cut=t_cut, lam=lam, lam_root=lam_root)
        n = trellis.n_leaves
        super().__init__(TreeGenConfig(n_max=max(n, 3), d_model=4, n_heads=1, n_layers=1, t_cut=t_cut, lam=lam))
        trees = trellis.valid_trees(max_trees=200_000)
        self._tables = torch.as_tensor(canonical_rows(trellis.leaves, trees))  # (T, R)
        self._log_post = torch.as_tensor(
            [trellis.log_posterior(_parents(trellis, row)) for row in trees], dtype=torch.float64
        )
        self._n = n

    def forward(
        self, leaf_feat: torch.Tensor, pair_feat: torch.Tensor, theta: torch.Tensor, t: torch.Tensor
    ) -> torch.Tensor:
        """Exact posterior predictive logits ``(B, 2N-2, N-1)`` given the beliefs ``theta``."""
        mask, _ = row_layout(self._n)
        log_theta = torch.log(theta.double().clamp_min(1e-300))  # (B, R, S)
        rows = torch.arange(self._tables.shape[1])
        log_w = self._log_post[None] + log_theta[:, rows[None, :], self._tables].sum(-1)  # (B, T)
        w = torch.softmax(log_w, -1)
        marg = torch.zeros(theta.shape, dtype=torch.float64)
        for r in range(self._tables.shape[1]):
            marg[:, r] = torch.zeros(theta.shape[0], theta.shape[2], dtype=torch.float64).index_add_(
                1, self._tables[:, r], w
            )
        return torch.log(marg.clamp_min(1e-300)).float().masked_fill(~mask, -torch.inf)


def _parents(trellis: Trellis, masks: np.ndarray) -> np.ndarray:
    from nips25_treegen.labelling import canonical_parents

    return canonical_parents(trellis.leaves, masks)
