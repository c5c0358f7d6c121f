"""Real graphs available offline, with different feature and class counts.

* ``karate``: Zachary's karate club (networkx), 34 nodes, 2 clubs, no features (adjacency rows).
* ``davis``: Davis' Southern women (networkx), 32 nodes, women vs events (2 classes), no features.
* ``drosophila_left`` / ``drosophila_right``: larval Drosophila mushroom-body connectome, 209 / 213 neurons,
  4 cell types (K, P, O, I); Eichler et al., Nature 548 (2017), as shipped by graspologic 3.4.4 (MIT licence,
  copied into ``data/``). Edges symmetrised, weights dropped, adjacency rows as features.
* ``iris``, ``wine``, ``breast_cancer``: scikit-learn tables as kNN graphs (k=10) over standardised rows.
* ``digits012``, ``digits345``, ``digits6789``: scikit-learn's 8x8 digits restricted to disjoint class subsets
  (disjoint nodes), kNN graphs; three tasks with 3, 3 and 4 classes.

Every split is stratified with 20 labelled nodes per class (fewer on small graphs, see
:func:`~nips25_gfm.graphs.stratified_split`), the rest halved into validation and test.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files

import numpy as np

from nips25_gfm.graphs import GraphTask, from_adjacency, from_networkx, from_tabular_knn

__all__ = ["DATASETS", "load_dataset"]


def _karate(seed: int, max_features: int) -> GraphTask:
    import networkx as nx

    return from_networkx(nx.karate_club_graph(), label="club", name="karate", seed=seed, max_features=max_features)


def _davis(seed: int, max_features: int) -> GraphTask:
    import networkx as nx

    return from_networkx(
        nx.davis_southern_women_graph(), label="bipartite", name="davis", seed=seed, max_features=max_features
    )


def _drosophila(side: str) -> Callable[[int, int], GraphTask]:
    def load(seed: int, max_features: int) -> GraphTask:
        root = files("nips25_gfm") / "data"
        adj = np.loadtxt(str(root / f"{side}_adjacency.csv"))
        labels = np.loadtxt(str(root / f"{side}_cell_labels.csv"), dtype=str)
        return from_adjacency(
            (adj > 0).astype(float), None, labels, name=f"drosophila_{side}", seed=seed, max_features=max_features
        )

    return load


def _sklearn(name: str, classes: tuple[int, ...] | None = None) -> Callable[[int, int], GraphTask]:
    def load(seed: int, max_features: int) -> GraphTask:
        from sklearn import datasets

        x, y = getattr(datasets, f"load_{name}")(return_X_y=True)
        if classes is not None:
            keep = np.isin(y, classes)
            x, y = x[keep], y[keep]
        label = name if classes is None else name + "".join(map(str, classes))
        return from_tabular_knn(x, y, k=10, name=label, seed=seed, max_features=max_features)

    return load


DATASETS: dict[str, Callable[[int, int], GraphTask]] = {
    "karate": _karate,
    "davis": _davis,
    "drosophila_left": _drosophila("left"),
    "drosophila_right": _drosophila("right"),
    "iris": _sklearn("iris"),
    "wine": _sklearn("wine"),
    "breast_cancer": _sklearn("breast_cancer"),
    "digits012": _sklearn("digits", (0, 1, 2)),
    "digits345": _sklearn("digits", (3, 4, 5)),
    "digits6789": _sklearn("digits", (6, 7, 8, 9)),
}


def load_dataset(name: str, *, seed: int = 0, max_features: int = 32) -> GraphTask:
    """One offline graph of :data:`DATASETS` as a :class:`~nips25_gfm.graphs.GraphTask`.

    Args:
        name: a key of :data:`DATASETS`.
        seed: split (and PCA) seed.
        max_features: PCA cap for wide feature matrices (featureless graphs use adjacency rows).

    Raises:
        ValueError: unknown ``name`` or ``max_features < 1``.
    """
    if name not in DATASETS:
        raise ValueError(f"name: unknown dataset {name!r}; expected one of {sorted(DATASETS)}")
    if isinstance(max_features, bool) or not isinstance(max_features, int) or max_features < 1:
        raise ValueError(f"max_features: expected an int >= 1, got {max_features!r}")
    return DATASETS[name](seed, max_features)
