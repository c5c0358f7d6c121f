r"""Set functions on boolean masks: facility location, graph cut, coverage and modular functions.

A set :math:`S \subseteq N`, :math:`N = \{0, \dots, n-1\}`, is a boolean mask of shape ``(n,)``. Every set function
is a JAX pytree (its arrays are leaves), so it can be passed through ``jax.jit`` and ``jax.vmap`` and the algorithms
compile once per shape. ``f(mask)`` is the value; ``f.gains(mask)`` the vector of marginal gains
:math:`f(S \cup \{i\}) - f(S)` for every :math:`i` (zero for :math:`i \in S`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from nips25_submodular._checks import as_key, as_matrix, as_vector, check_int, check_real, concrete, mask_arg

__all__ = [
    "CallableSetFunction",
    "Coverage",
    "FacilityLocation",
    "GraphCut",
    "Modular",
    "SetFunction",
    "check_submodular",
    "require_set_function",
]

_HOW_TO_WRAP = "wrap a Python function with CallableSetFunction(fn, n) (or subclass SetFunction)"


def require_set_function(f: Any, name: str = "f") -> None:
    """Raise a ``TypeError`` naming ``name`` unless ``f`` is a :class:`SetFunction` (saying how to wrap a callable)."""
    if isinstance(f, SetFunction):
        return
    hint = (
        _HOW_TO_WRAP
        if callable(f)
        else "build one of FacilityLocation, GraphCut, Coverage, Modular, or " + _HOW_TO_WRAP
    )
    raise TypeError(f"{name} must be a SetFunction, got {type(f).__name__}; {hint}")


class SetFunction:
    """Base class of set functions :math:`f: 2^N \\to \\mathbb{R}` evaluated on boolean masks ``(n,)``.

    Subclasses list their array attributes in ``_leaves`` (pytree children) and their static attributes in
    ``_static``; they are registered as JAX pytrees automatically. They implement :meth:`value` and may override
    :meth:`gains` with a closed form.

    Attributes:
        queries_per_eval: oracle queries one evaluation of this function costs (1 for a plain function or an
            oracle, ``m`` for the smoothing surrogate, which averages ``m`` oracle values).
    """

    _leaves: ClassVar[tuple[str, ...]] = ()
    _static: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        jax.tree_util.register_pytree_node(cls, cls._tree_flatten, cls._tree_unflatten)

    def _tree_flatten(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(getattr(self, k) for k in self._leaves), tuple(getattr(self, k) for k in self._static)

    @classmethod
    def _tree_unflatten(cls, aux: tuple[Any, ...], children: tuple[Any, ...]) -> SetFunction:
        obj = object.__new__(cls)
        for k, v in zip(cls._leaves, children):
            object.__setattr__(obj, k, v)
        for k, v in zip(cls._static, aux):
            object.__setattr__(obj, k, v)
        return obj

    @property
    def n(self) -> int:
        """Size of the ground set."""
        raise NotImplementedError

    @property
    def queries_per_eval(self) -> int:
        """Oracle queries one evaluation costs."""
        return 1

    def value(self, mask: jax.Array) -> jax.Array:
        """:math:`f(S)` for a boolean mask ``(n,)``; a float scalar."""
        raise NotImplementedError

    def __call__(self, mask: Any) -> jax.Array:
        """:math:`f(S)`; ``mask`` is checked (shape ``(n,)``, bool or integer dtype; 0/1 values when concrete).

        Traceable: under ``jit``/``vmap`` only the shape and dtype are checked.

        Raises:
            ValueError: if ``mask`` does not have shape ``(n,)``.
            TypeError: if ``mask`` is not boolean (or 0/1 integers).
        """
        return self.value(mask_arg(mask, "mask", n=self.n))

    def gains(self, mask: jax.Array) -> jax.Array:
        r"""Marginal gains :math:`f(S \cup \{i\}) - f(S)` for all :math:`i`, shape ``(n,)``; zero for :math:`i \in S`.

        The default evaluates :math:`f` on the ``n`` augmented masks with ``jax.vmap``.
        """
        mask = jnp.asarray(mask, dtype=bool)
        plus = mask[None, :] | jnp.eye(self.n, dtype=bool)
        return jnp.where(mask, 0.0, jax.vmap(self.value)(plus) - self.value(mask))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={self.n})"


class FacilityLocation(SetFunction):
    r"""Facility location :math:`f(S) = \sum_{j} \max_{i \in S} s_{ji}` with :math:`f(\emptyset) = 0`.

    Monotone submodular for a non-negative similarity matrix.

    Args:
        sim: similarities ``(n_data, n)``, non-negative and finite: ``sim[j, i]`` is how well candidate ``i``
            represents data point ``j``. The ground set is the ``n`` columns.

    Raises:
        ValueError: if ``sim`` is not 2-D, empty, negative or not finite.

    Example:
        >>> f = FacilityLocation([[1.0, 0.0], [0.5, 1.0]])
        >>> float(f([True, False])), float(f([True, True]))
        (1.5, 2.0)
    """

    _leaves = ("sim",)

    def __init__(self, sim: Any) -> None:
        self.sim = as_matrix(sim, "sim", nonnegative=True)

    @property
    def n(self) -> int:
        return int(self.sim.shape[1])

    def _cover(self, mask: jax.Array) -> jax.Array:
        return jnp.max(jnp.where(mask[None, :], self.sim, 0.0), axis=1)

    def value(self, mask: jax.Array) -> jax.Array:
        return self._cover(mask).sum()

    def gains(self, mask: jax.Array) -> jax.Array:
        mask = jnp.asarray(mask, dtype=bool)
        cover = self._cover(mask)
        return jnp.where(mask, 0.0, jnp.maximum(self.sim - cover[:, None], 0.0).sum(axis=0))


class GraphCut(SetFunction):
    r"""Cut function :math:`f(S) = \sum_{i \in S, j \notin S} W_{ij}` of an undirected weighted graph.

    Non-negative, symmetric and (non-monotone) submodular; its maximum is the max-cut.

    Args:
        W: symmetric non-negative weights ``(n, n)``; the diagonal (self-loops) is ignored.

    Raises:
        ValueError: if ``W`` is not square, not symmetric, negative or not finite.

    Example:
        >>> f = GraphCut([[0, 1, 0], [1, 0, 2], [0, 2, 0]])
        >>> float(f([False, True, False]))
        3.0
    """

    _leaves = ("W",)

    def __init__(self, W: Any) -> None:
        w = as_matrix(W, "W", nonnegative=True, square=True)
        if concrete(w) and not bool(jnp.allclose(w, w.T)):
            raise ValueError("W must be symmetric (an undirected graph)")
        self.W = jnp.where(jnp.eye(w.shape[0], dtype=bool), 0.0, w)

    @property
    def n(self) -> int:
        return int(self.W.shape[0])

    def value(self, mask: jax.Array) -> jax.Array:
        x = mask.astype(self.W.dtype)
        return x @ self.W @ (1.0 - x)

    def gains(self, mask: jax.Array) -> jax.Array:
        mask = jnp.asarray(mask, dtype=bool)
        x = mask.astype(self.W.dtype)
        return jnp.where(mask, 0.0, self.W @ (1.0 - 2.0 * x))


class Coverage(SetFunction):
    r"""Weighted coverage :math:`f(S) = \sum_{u} w_u \, \mathbb{1}[\exists i \in S: A_{ui} = 1]`.

    Monotone submodular.

    Args:
        incidence: ``(n_items, n)`` 0/1 matrix; ``incidence[u, i]`` says whether element ``i`` covers item ``u``.
        weights: item weights ``(n_items,)``, non-negative; all ones when omitted.

    Raises:
        ValueError: if the shapes disagree, an entry of ``incidence`` is not 0/1 or a weight is negative.

    Example:
        >>> f = Coverage([[1, 0], [1, 1], [0, 1]], weights=[1.0, 2.0, 4.0])
        >>> float(f([True, False]))
        3.0
    """

    _leaves = ("incidence", "weights")

    def __init__(self, incidence: Any, weights: Any = None) -> None:
        inc = as_matrix(incidence, "incidence")
        if concrete(inc) and not bool(jnp.all((inc == 0) | (inc == 1))):
            raise ValueError("incidence must hold only 0 and 1")
        w = jnp.ones(inc.shape[0]) if weights is None else as_vector(weights, "weights", nonnegative=True)
        if w.shape[0] != inc.shape[0]:
            raise ValueError(f"weights must have shape ({inc.shape[0]},) (one per item), got {w.shape}")
        self.incidence = inc
        self.weights = w

    @property
    def n(self) -> int:
        return int(self.incidence.shape[1])

    def _uncovered(self, mask: jax.Array) -> jax.Array:
        return (self.incidence @ mask.astype(self.incidence.dtype)) == 0

    def value(self, mask: jax.Array) -> jax.Array:
        return jnp.where(self._uncovered(mask), 0.0, self.weights).sum()

    def gains(self, mask: jax.Array) -> jax.Array:
        mask = jnp.asarray(mask, dtype=bool)
        fresh = jnp.where(self._uncovered(mask), self.weights, 0.0)
        return jnp.where(mask, 0.0, fresh @ self.incidence)


class Modular(SetFunction):
    r"""Modular (linear) function :math:`f(S) = \sum_{i \in S} w_i`; weights may have any sign.

    Args:
        w: weights ``(n,)``, finite.

    Example:
        >>> float(Modular([1.0, -2.0, 3.0])([True, True, True]))
        2.0
    """

    _leaves = ("w",)

    def __init__(self, w: Any) -> None:
        self.w = as_vector(w, "w")

    @property
    def n(self) -> int:
        return int(self.w.shape[0])

    def value(self, mask: jax.Array) -> jax.Array:
        return jnp.where(mask, self.w, 0.0).sum()

    def gains(self, mask: jax.Array) -> jax.Array:
        return jnp.where(jnp.asarray(mask, dtype=bool), 0.0, self.w)


class CallableSetFunction(SetFunction):
    r"""The user's own set function :math:`f(S)`, given as a Python callable on boolean masks.

    The algorithms ``jit`` and ``vmap`` the function, so ``fn`` must be written with ``jax.numpy`` (no
    ``np.asarray`` of its argument, no Python ``if`` on its values). Marginal gains use the default
    :meth:`SetFunction.gains` (``n + 1`` evaluations, vectorised). Nothing here proves ``fn`` submodular: run
    :func:`check_submodular` on it once (the guarantees of the paper assume :math:`f \ge 0` submodular).

    Args:
        fn: ``fn(mask) -> scalar``, ``mask`` a boolean JAX array ``(n,)``; returns a finite real scalar.
        n: size of the ground set, ``>= 1``.

    Raises:
        TypeError: if ``fn`` is not callable, cannot be traced by JAX, or does not return a real number.
        ValueError: if ``n < 1``, or ``fn`` returns a non-scalar or a non-finite value on the empty or the full set.

    Example:
        >>> f = CallableSetFunction(lambda m: jnp.sqrt(jnp.sum(jnp.where(m, jnp.arange(4.0), 0.0))), 4)
        >>> float(f([False, True, False, True]))
        2.0
    """

    _static = ("fn", "_n")

    def __init__(self, fn: Callable[[jax.Array], Any], n: int) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable as fn(mask) -> scalar, got {type(fn).__name__}")
        self._n = check_int(n, "n", low=1)
        self.fn = fn
        try:
            out = jax.eval_shape(fn, jax.ShapeDtypeStruct((self._n,), jnp.bool_))
        except Exception as err:  # any failure to trace is the user's function, reported as such
            raise TypeError(
                f"fn could not be traced on a boolean mask of shape ({self._n},) (write it with jax.numpy, "
                f"no numpy conversion or Python branching on mask values): {type(err).__name__}: {err}"
            ) from err
        if not hasattr(out, "shape") or out.shape != ():
            raise ValueError(f"fn must return a scalar, got shape {getattr(out, 'shape', type(out).__name__)}")
        if not (jnp.issubdtype(out.dtype, jnp.floating) or jnp.issubdtype(out.dtype, jnp.integer)):
            raise TypeError(f"fn must return a real number, got dtype {out.dtype}")
        for label, mask in (("empty", jnp.zeros(self._n, bool)), ("full", jnp.ones(self._n, bool))):
            if not bool(jnp.isfinite(self.value(mask))):
                raise ValueError(f"fn must return finite values, got {float(self.value(mask))} on the {label} set")

    @property
    def n(self) -> int:
        return self._n

    def value(self, mask: jax.Array) -> jax.Array:
        return jnp.asarray(self.fn(mask), dtype=jnp.result_type(float))

    def __repr__(self) -> str:
        return f"CallableSetFunction({getattr(self.fn, '__name__', 'fn')}, n={self.n})"


@partial(jax.jit, static_argnames=("n_checks",))
def _diminishing_returns(f: SetFunction, key: jax.Array, *, n_checks: int) -> tuple[jax.Array, ...]:
    """Random ``(i, A, B)`` with :math:`A \\subseteq B \\not\\ni i` and the gains of ``i`` on ``A`` and ``B``."""
    n = f.n
    k_i, k_b, k_a, k_rate = jax.random.split(key, 4)
    i = jax.random.randint(k_i, (n_checks,), 0, n)
    rates = jax.random.uniform(k_rate, (n_checks, 2))
    B = jax.random.uniform(k_b, (n_checks, n)) < rates[:, :1]
    A = B & (jax.random.uniform(k_a, (n_checks, n)) < rates[:, 1:])
    off = ~jax.nn.one_hot(i, n, dtype=bool)
    A, B = A & off, B & off

    def gain(S: jax.Array, j: jax.Array) -> jax.Array:
        return f.value(S.at[j].set(True)) - f.value(S)

    ga, gb = jax.vmap(jax.vmap(gain), in_axes=(0, None))(jnp.stack([A, B]), i)
    return i, A, B, ga, gb


def check_submodular(
    f: SetFunction, *, key: jax.Array, n_checks: int = 1024, monotone: bool = False, atol: float = 1e-5
) -> None:
    r"""Spot-check diminishing returns on random pairs :math:`A \subseteq B \subseteq N`, :math:`i \notin B`.

    Submodularity is :math:`f(A + i) - f(A) \ge f(B + i) - f(B)` (Fujishige 2005; Bhawalkar et al., Sec. 2);
    with ``monotone`` also :math:`f(B + i) \ge f(B)`. Each check draws :math:`i` uniformly,
    :math:`B \subseteq N - i` with a uniform inclusion rate and :math:`A \subseteq B` by thinning it, all in one
    ``vmap``. A passing check is evidence, not proof (exhaustive checking needs :math:`2^n` sets); a failing one is
    a counterexample. Use it on the noiseless ``f`` (a noisy oracle is not submodular).

    Args:
        f: the set function to check, ground set size ``n``.
        key: PRNG key.
        n_checks: number of random ``(A, B, i)`` triples, ``>= 1``.
        monotone: also check that no gain on ``B`` is below ``-atol``.
        atol: tolerance in units of ``f`` (float32 rounding).

    Raises:
        TypeError: if ``f`` is not a :class:`SetFunction`.
        ValueError: naming ``f`` and giving the counterexample, if a check fails.

    References:
        Fujishige, *Submodular Functions and Optimization*, 2nd ed., 2005 (diminishing returns);
        Bhawalkar et al., NeurIPS 2025, Sec. 2 (the guarantees assume :math:`f \ge 0` submodular).

    Example:
        >>> check_submodular(Modular([1.0, -2.0]), key=jax.random.key(0))
    """
    require_set_function(f)
    n_checks = check_int(n_checks, "n_checks", low=1)
    atol = check_real(atol, "atol", low=0.0)
    i, A, B, ga, gb = (np.asarray(x) for x in _diminishing_returns(f, as_key(key), n_checks=n_checks))  # host side
    for name, bad in (("submodular", ga < gb - atol), ("monotone", (gb < -atol) & monotone)):
        if bool(bad.any()):
            c = int(np.argmax(bad))
            a_set, b_set = np.flatnonzero(A[c]).tolist(), np.flatnonzero(B[c]).tolist()
            detail = (
                f"f(A+i)-f(A) = {float(ga[c]):.6g} < f(B+i)-f(B) = {float(gb[c]):.6g}"
                if name == "submodular"
                else f"f(B+i)-f(B) = {float(gb[c]):.6g} < 0"
            )
            raise ValueError(
                f"f is not {name}: {detail} for i={int(i[c])}, A={a_set}, B={b_set} "
                f"({int(bad.sum())} of {n_checks} random checks failed)"
            )
