"""Training-free estimates of every model's quality and cost from the k nearest history queries (PORT, Sec. 3.1)."""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import numpy as np

from nips25_routing.history import HistoryStore
from nips25_routing.validation import as_matrix, check_nonzero_rows, check_positive_int

__all__ = ["BACKENDS", "EF_SEARCH_CANDIDATES", "NPROBE_CANDIDATES", "ANNEstimator", "l2_normalize", "recall_at_k"]

Backend = Literal["faiss-hnsw", "faiss-ivf", "faiss-flat", "sklearn"]
BACKENDS: tuple[str, ...] = ("faiss-hnsw", "faiss-ivf", "faiss-flat", "sklearn")
EF_SEARCH_CANDIDATES: tuple[int, ...] = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
NPROBE_CANDIDATES: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` divided by their L2 norm (zero rows stay zero), as contiguous float32."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.ascontiguousarray(x / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def recall_at_k(found: Any, exact: Any) -> float:
    r"""Mean recall@k of approximate neighbour lists: :math:`\frac1B\sum_j |A_j \cap E_j| / k`.

    Args:
        found: ``(B, k)`` integer neighbour indices from the approximate search.
        exact: ``(B, k)`` integer indices of the exact ``k`` nearest neighbours of the same queries.

    Returns:
        The share of exact neighbours found, in ``[0, 1]``.

    Raises:
        ValueError: if the two arrays are not 2-D of the same non-empty shape.

    Example:
        >>> recall_at_k([[0, 1], [2, 3]], [[1, 0], [2, 4]])
        0.75
    """
    a = np.asarray(found)
    e = np.asarray(exact)
    if a.ndim != 2 or a.shape != e.shape or a.size == 0:
        raise ValueError(f"found and exact must be non-empty (B, k) arrays of one shape, got {a.shape} and {e.shape}")
    hits = (a[:, :, None] == e[:, None, :]).any(axis=2).sum()  # each exact row holds distinct indices
    return float(hits / a.size)


class ANNEstimator:
    r"""kNN estimates :math:`\hat d_{ji}, \hat g_{ji}` of model quality and cost for incoming queries.

    For query :math:`j` with L2-normalised embedding :math:`q_j`, let :math:`N_k(j)` be the ``k`` history queries of
    largest cosine similarity. Then :math:`\hat d_{ji} = \frac1k\sum_{h\in N_k(j)} d_{hi}` and
    :math:`\hat g_{ji} = \frac1k\sum_{h\in N_k(j)} g_{hi}`.

    Args:
        history: the :class:`~nips25_routing.history.HistoryStore` ``H``.
        backend: ``"faiss-hnsw"`` (approximate, the default: faiss ``IndexHNSWFlat`` on inner product),
            ``"faiss-ivf"`` (approximate: faiss ``IndexIVFFlat`` on inner product, ``nlist`` k-means lists of which
            ``nprobe`` are scanned per query; the fastest at recall@5 >= 0.95 in the package benchmark),
            ``"faiss-flat"`` (exact, faiss ``IndexFlatIP``) or ``"sklearn"`` (exact, scikit-learn
            ``NearestNeighbors(metric="cosine", algorithm="brute")``; the KNN baselines' reference).
        k: neighbours per estimate, ``1 <= k <= H``.
        hnsw_m: HNSW graph degree (faiss ``M``).
        ef_construction: HNSW build-time candidate list size.
        ef_search: HNSW query-time candidate list size (``>= k``; the official code's 50). Lower is faster and
            finds fewer of the exact neighbours: :meth:`tune_ef_search` picks the smallest value reaching a recall
            target on your queries, :meth:`set_ef_search` sets one.
        nlist: ``faiss-ivf`` only: number of inverted lists (k-means cells), ``1 <= nlist <= H``; default
            ``round(sqrt(H))``, the usual faiss starting point. faiss wants ~39 training rows per list.
        nprobe: ``faiss-ivf`` only: lists scanned per query, ``1 <= nprobe <= nlist`` (clipped to ``nlist``).
            Higher is slower and finds more of the exact neighbours: :meth:`tune_nprobe` picks the smallest value
            reaching a recall target on your queries (do: the right value depends on how clustered your
            embeddings are).
        index: your own, already filled faiss index (``IndexIVFFlat``, ``IndexHNSWFlat``, ``IndexIVFPQ``, a GPU
            index from ``faiss.index_cpu_to_gpu``, ...) holding ``l2_normalize(history.embeddings)`` in the
            history's row order, searched with inner product (so its neighbours are the most cosine-similar).
            Anything with ``ntotal``, ``d`` and ``search(x, k) -> (distances, labels)`` works. Overrides
            ``backend`` (then ``"index"``); its search settings (``nprobe``, ``efSearch``) are yours.

    Raises:
        ValueError: on an unknown backend, out-of-range ``k``/HNSW parameters, or an ``index`` whose size or
            dimension differs from the history's.

    Warns:
        UserWarning: if fewer than half of 32 probed history rows find themselves (or a duplicate) among their
            ``k`` neighbours in a user's ``index``: it does not hold the normalised history in row order (for
            example, it was built on the raw embeddings).
        TypeError: if ``history`` is not a ``HistoryStore`` or ``index`` has no ``search``.

    References:
        Wu & Silwal, "Efficient Training-Free Online Routing for High-Volume Multi-LLM Serving", NeurIPS 2025,
        arXiv:2509.02718, Sec. 3.1 (ANN estimation); official code uses hnswlib with M=32, efC=200, ef=50, k=5.

    Example:
        >>> import numpy as np
        >>> h = HistoryStore(np.eye(3), np.eye(3), np.ones((3, 3)), ["a", "b", "c"])
        >>> d, g = ANNEstimator(h, backend="faiss-flat", k=1).estimate(np.array([[0.0, 2.0, 0.1]]))
        >>> d.tolist()
        [[0.0, 1.0, 0.0]]

        Your own faiss index, here an IVF one over the normalised history:

        >>> import faiss
        >>> rng = np.random.default_rng(0)
        >>> hist = HistoryStore(rng.normal(size=(400, 8)), rng.uniform(size=(400, 2)), rng.uniform(size=(400, 2)))
        >>> quantizer = faiss.IndexFlatIP(8)
        >>> ivf = faiss.IndexIVFFlat(quantizer, 8, 4, faiss.METRIC_INNER_PRODUCT)
        >>> base = l2_normalize(hist.embeddings)
        >>> ivf.train(base); ivf.add(base); ivf.nprobe = 4  # all lists: exact
        >>> q = rng.normal(size=(3, 8))
        >>> exact = ANNEstimator(hist, backend="faiss-flat").neighbors(q)
        >>> bool((ANNEstimator(hist, index=ivf).neighbors(q) == exact).all())
        True
    """

    def __init__(
        self,
        history: HistoryStore,
        *,
        backend: Backend = "faiss-hnsw",
        k: int = 5,
        hnsw_m: int = 32,
        ef_construction: int = 200,
        ef_search: int = 50,
        nlist: int | None = None,
        nprobe: int = 8,
        index: Any = None,
    ) -> None:
        if not isinstance(history, HistoryStore):
            raise TypeError(f"history must be a HistoryStore, got {type(history).__name__}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        k = check_positive_int(k, "k")
        if k > history.size:
            raise ValueError(f"k must be <= the history size {history.size}, got {k}")
        for name, value in (("hnsw_m", hnsw_m), ("ef_construction", ef_construction), ("ef_search", ef_search)):
            check_positive_int(value, name)
        if ef_search < k:
            raise ValueError(f"ef_search must be >= k={k}, got {ef_search}")
        if nlist is None:
            nlist = max(1, min(history.size, round(math.sqrt(history.size))))
        nlist = check_positive_int(nlist, "nlist")
        if nlist > history.size:
            raise ValueError(f"nlist must be <= the history size {history.size}, got {nlist}")
        nprobe = min(check_positive_int(nprobe, "nprobe"), nlist)
        self.history = history
        self.backend: str = backend
        self.k = k
        self.hnsw_m = hnsw_m
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self.nlist = nlist
        self.nprobe = nprobe
        self._exact: Any = None
        # quality and cost side by side, (H, 2M): one gather per batch instead of two (same sums, bit for bit)
        self._quality_cost = np.concatenate([history.quality, history.cost], axis=1)
        if index is None:
            self._index: Any = self._build(l2_normalize(history.embeddings))
            return
        if not callable(getattr(index, "search", None)):
            raise TypeError(f"index must be a faiss index with a search method, got {type(index).__name__}")
        if int(getattr(index, "ntotal", -1)) != history.size:
            raise ValueError(
                f"index must hold the {history.size} history rows, it holds {getattr(index, 'ntotal', None)}"
            )
        if int(getattr(index, "d", -1)) != self.dim:
            raise ValueError(f"index must have dimension {self.dim}, got {getattr(index, 'd', None)}")
        self.backend = "index"
        self._index = index
        if getattr(index, "hnsw", None) is not None:
            self.ef_search = int(index.hnsw.efSearch)
        if hasattr(index, "nprobe") and hasattr(index, "nlist"):
            self.nlist, self.nprobe = int(index.nlist), int(index.nprobe)
        self._check_index_content()

    def _check_index_content(self, probes: int = 32) -> None:
        """Warn when a user's index does not hold ``l2_normalize(history.embeddings)`` in history order.

        Searches up to ``probes`` evenly spaced normalised history rows; a correct index returns, among its ``k``
        neighbours, the row itself or a duplicate of it (cosine 1). An index built on the raw embeddings, or in
        another row order, finds almost none: the estimates would be silently wrong.
        """
        base = l2_normalize(self.history.embeddings)
        rows = np.unique(np.linspace(0, self.history.size - 1, min(probes, self.history.size)).astype(np.int64))
        _, labels = self._index.search(np.ascontiguousarray(base[rows], dtype=np.float32), self.k)
        labels = np.asarray(labels, dtype=np.int64)
        valid = (labels >= 0) & (labels < self.history.size)
        cos = np.einsum("bd,bkd->bk", base[rows], base[np.where(valid, labels, 0)])
        found = float(np.mean(np.any(valid & (cos >= 1.0 - 1e-5), axis=1)))
        if found < 0.5:
            warnings.warn(
                f"index: only {found:.0%} of {len(rows)} history rows find themselves among their {self.k} "
                "neighbours; the index must hold l2_normalize(history.embeddings) in the history's row order "
                "(searched by inner product), else every estimate is wrong",
                UserWarning,
                stacklevel=3,
            )

    @property
    def dim(self) -> int:
        """Embedding dimension ``D``."""
        return int(self.history.embeddings.shape[1])

    @property
    def n_models(self) -> int:
        """Number of models ``M``."""
        return self.history.n_models

    def _build(self, base: np.ndarray) -> Any:
        if self.backend == "sklearn":
            from sklearn.neighbors import NearestNeighbors

            return NearestNeighbors(n_neighbors=self.k, metric="cosine", algorithm="brute").fit(base)
        import faiss

        index: Any
        if self.backend == "faiss-flat":
            index = faiss.IndexFlatIP(base.shape[1])
        elif self.backend == "faiss-ivf":
            quantizer = faiss.IndexFlatIP(base.shape[1])
            index = faiss.IndexIVFFlat(quantizer, base.shape[1], self.nlist, faiss.METRIC_INNER_PRODUCT)
            index.train(base)
            index.nprobe = self.nprobe
        else:
            index = faiss.IndexHNSWFlat(base.shape[1], self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.ef_construction
            index.hnsw.efSearch = self.ef_search
        index.add(base)
        return index

    def exact_neighbors(self, queries: Any) -> np.ndarray:
        """Indices ``(B, k)`` of the exact ``k`` most cosine-similar history queries (faiss ``IndexFlatIP``).

        The reference that :meth:`recall` and :meth:`tune_ef_search` measure the index against. The flat index
        is built on first use and kept (``H x D`` float32).

        Raises:
            ValueError: if ``queries`` is not a finite, non-empty ``(B, D)`` array.
        """
        q = l2_normalize(self.check_queries(queries))
        if self._exact is None:
            import faiss

            self._exact = faiss.IndexFlatIP(self.dim)
            self._exact.add(l2_normalize(self.history.embeddings))
        return np.asarray(self._exact.search(q, self.k)[1], dtype=np.int64)

    def recall(self, queries: Any) -> float:
        """Recall@k of this estimator's neighbours against the exact ones on ``queries`` (:func:`recall_at_k`).

        1.0 for the exact backends; for HNSW, IVF or PQ it is the share of the true ``k`` nearest history queries
        the index finds, the quantity ``efSearch``/``nprobe`` trade against speed.

        Raises:
            ValueError: if ``queries`` is not a finite, non-empty ``(B, D)`` array.
        """
        return recall_at_k(self.neighbors(queries), self.exact_neighbors(queries))

    def set_ef_search(self, ef_search: int) -> None:
        """Set the HNSW query-time candidate list size (``>= k``) of a ``faiss-hnsw`` (or your HNSW) index.

        Raises:
            ValueError: if ``ef_search < k`` or the index is not an HNSW index.
        """
        ef = check_positive_int(ef_search, "ef_search")
        if ef < self.k:
            raise ValueError(f"ef_search must be >= k={self.k}, got {ef_search}")
        hnsw = getattr(self._index, "hnsw", None)
        if hnsw is None:
            raise ValueError(f"ef_search applies to an HNSW index, this estimator's backend is {self.backend!r}")
        hnsw.efSearch = ef
        self.ef_search = ef

    def tune_ef_search(
        self, queries: Any, *, target_recall: float = 0.95, candidates: tuple[int, ...] = EF_SEARCH_CANDIDATES
    ) -> tuple[int, float]:
        """Set the smallest ``efSearch`` whose recall@k on ``queries`` reaches ``target_recall``; return it.

        Tune on a sample of *your* queries (e.g. a few hundred held-out history rows or the first stream batch):
        the recall of a given ``efSearch`` depends on the data. Candidates below ``k`` are skipped; if none
        reaches the target, the largest is kept and its recall returned (check it).

        Args:
            queries: ``(B, D)`` sample queries.
            target_recall: in ``(0, 1]``.
            candidates: increasing ``efSearch`` values to try.

        Returns:
            ``(ef_search, recall)`` now in use.

        Raises:
            ValueError: on a bad ``target_recall``, no candidate ``>= k``, or a non-HNSW index.

        Example:
            >>> rng = np.random.default_rng(0)
            >>> h = HistoryStore(rng.normal(size=(500, 8)), rng.uniform(size=(500, 2)), rng.uniform(size=(500, 2)))
            >>> est = ANNEstimator(h)
            >>> ef, rec = est.tune_ef_search(rng.normal(size=(100, 8)), target_recall=0.9)
            >>> est.ef_search == ef and rec >= 0.9
            True
        """
        usable = sorted({int(c) for c in candidates if int(c) >= self.k})
        if not usable:
            raise ValueError(f"candidates must hold a value >= k={self.k}, got {candidates}")
        return self._tune(queries, target_recall, usable, self.set_ef_search, lambda: self.ef_search)

    def set_nprobe(self, nprobe: int) -> None:
        """Set the number of inverted lists scanned per query (``1 <= nprobe``, clipped to ``nlist``) of an IVF index.

        Raises:
            ValueError: if ``nprobe < 1`` or the index is not an IVF index.
        """
        n = check_positive_int(nprobe, "nprobe")
        if not hasattr(self._index, "nprobe") or not hasattr(self._index, "nlist"):
            raise ValueError(f"nprobe applies to an IVF index, this estimator's backend is {self.backend!r}")
        self._index.nprobe = min(n, int(self._index.nlist))
        self.nprobe = int(self._index.nprobe)

    def tune_nprobe(
        self, queries: Any, *, target_recall: float = 0.95, candidates: tuple[int, ...] = NPROBE_CANDIDATES
    ) -> tuple[int, float]:
        """Set the smallest ``nprobe`` whose recall@k on ``queries`` reaches ``target_recall``; return it.

        The IVF counterpart of :meth:`tune_ef_search` (same rules: tune on a sample of your own queries; if no
        candidate reaches the target, the largest is kept and its recall returned).

        Returns:
            ``(nprobe, recall)`` now in use.

        Raises:
            ValueError: on a bad ``target_recall``, an empty ``candidates`` or a non-IVF index.

        Example:
            >>> rng = np.random.default_rng(0)
            >>> h = HistoryStore(rng.normal(size=(800, 8)), rng.uniform(size=(800, 2)), rng.uniform(size=(800, 2)))
            >>> est = ANNEstimator(h, backend="faiss-ivf", nlist=8)
            >>> n, rec = est.tune_nprobe(rng.normal(size=(100, 8)), target_recall=0.9)
            >>> est.nprobe == n and rec >= 0.9
            True
        """
        usable = sorted({int(c) for c in candidates if int(c) >= 1})
        if not usable:
            raise ValueError(f"candidates must hold a value >= 1, got {candidates}")
        return self._tune(queries, target_recall, usable, self.set_nprobe, lambda: self.nprobe)

    def _tune(
        self, queries: Any, target_recall: float, usable: list[int], setter: Any, current: Any
    ) -> tuple[int, float]:
        """Walk ``usable`` upwards with ``setter`` until recall@k on ``queries`` reaches ``target_recall``."""
        target = float(target_recall)
        if not 0.0 < target <= 1.0:
            raise ValueError(f"target_recall must be in (0, 1], got {target_recall}")
        q = self.check_queries(queries)
        exact = self.exact_neighbors(q)
        rec = 0.0
        for value in usable:
            setter(value)
            rec = recall_at_k(self._neighbors(q), exact)
            if rec >= target:
                break
        return int(current()), rec

    def neighbors(self, queries: Any) -> np.ndarray:
        """Indices ``(B, k)`` of the ``k`` most cosine-similar history queries, most similar first.

        Raises:
            ValueError: if ``queries`` is not a finite, non-empty ``(B, D)`` array.
        """
        return self._neighbors(self.check_queries(queries))

    def check_queries(self, queries: Any) -> np.ndarray:
        """``queries`` as a validated ``(B, D)`` float32 array (finite, non-empty, no all-zero row).

        Routers validate a batch once with this and then call the estimator's unchecked path.

        Raises:
            ValueError: if ``queries`` is not a finite, non-empty ``(B, D)`` array or has an all-zero row.
        """
        return check_nonzero_rows(as_matrix(queries, "queries", cols=self.dim, dtype=np.float32), "queries")

    def _neighbors(self, q: np.ndarray) -> np.ndarray:
        q = l2_normalize(q)
        if self.backend == "sklearn":
            return np.asarray(self._index.kneighbors(q, return_distance=False), dtype=np.int64)
        _, idx = self._index.search(q, self.k)
        idx = np.asarray(idx, dtype=np.int64)
        if (idx < 0).any():
            raise RuntimeError(
                f"the index returned fewer than k={self.k} neighbours for some queries (label -1): raise nprobe "
                "or efSearch, or lower k"
            )
        return idx

    def estimate(self, queries: Any) -> tuple[np.ndarray, np.ndarray]:
        r"""Estimated quality and cost of every model on each query: means over the ``k`` nearest history queries.

        Args:
            queries: ``(B, D)`` embeddings of incoming queries.

        Returns:
            ``(d_hat, g_hat)``, each ``(B, M)`` float64 (views into one ``(B, 2M)`` array). The estimator keeps
            its own copy of the history's quality and cost, taken when it was built.

        Raises:
            ValueError: if ``queries`` is not a finite, non-empty ``(B, D)`` array.
        """
        return self._estimate(self.check_queries(queries))

    def _estimate(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        both = self._quality_cost[self._neighbors(q)].mean(axis=1)  # (B, 2M)
        m = self.n_models
        return both[:, :m], both[:, m:]
