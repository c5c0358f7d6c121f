r"""The persistent noisy value oracle :math:`\tilde f` (Bhawalkar et al., NeurIPS 2025, Sec. 2).

Persistent means that a set always returns the same noisy value, so repeating a query and averaging is useless;
the noises of distinct sets are independent. There is no table of past answers: the noise of a set ``S`` is drawn
from a PRNG key derived from the oracle's key and the bits of the mask (``fold_in`` over its packed 32-bit words),
so the oracle is a pure function, safe under ``jax.jit`` and ``jax.vmap`` and independent of query order.
"""

from __future__ import annotations

import math
from typing import Literal

import jax
import jax.numpy as jnp

from nips25_submodular._checks import as_key, check_real_or_traced
from nips25_submodular.set_functions import SetFunction, require_set_function

__all__ = ["NOISE_FAMILIES", "PersistentNoisyOracle", "set_key"]

NOISE_FAMILIES = ("gaussian", "exponential", "uniform")
NoiseFamily = Literal["gaussian", "exponential", "uniform"]
NoiseMode = Literal["mult", "add"]


def set_key(key: jax.Array, mask: jax.Array) -> jax.Array:
    """A PRNG key that depends only on ``key`` and the set encoded by ``mask``.

    The mask ``(n,)`` is zero-padded to a multiple of 32 bits and packed into ``uint32`` words
    :math:`w_0, w_1, \\dots`; the key is ``fold_in(... fold_in(fold_in(key, w_0), w_1) ..., w_last)``.

    Args:
        key: the oracle's PRNG key.
        mask: boolean ``(n,)``.

    Returns:
        A PRNG key; equal masks give equal keys, distinct masks independent ones (up to hash collisions of the
        threefry cipher, which are negligible).

    Example:
        >>> k = jax.random.key(0)
        >>> bool(jnp.all(jax.random.key_data(set_key(k, jnp.array([True, False])))
        ...               == jax.random.key_data(set_key(k, jnp.array([True, False])))))
        True
    """
    n = mask.shape[-1]
    pad = (-n) % 32
    bits = jnp.pad(mask.astype(jnp.uint32), (0, pad)).reshape(-1, 32)
    words = (bits << jnp.arange(32, dtype=jnp.uint32)).sum(axis=1, dtype=jnp.uint32)
    for w in range(words.shape[0]):
        key = jax.random.fold_in(key, words[w])
    return key


def _standard_noise(key: jax.Array, family: str) -> jax.Array:
    """One draw with mean 0 and variance 1 from ``family``."""
    if family == "gaussian":
        return jax.random.normal(key)
    if family == "exponential":
        return jax.random.exponential(key) - 1.0
    return jax.random.uniform(key, minval=-math.sqrt(3.0), maxval=math.sqrt(3.0))


class PersistentNoisyOracle(SetFunction):
    r"""Persistent noisy oracle :math:`\tilde f(S)` around a set function :math:`f`.

    Multiplicative (the Hassidim–Singer model): :math:`\tilde f(S) = \xi_S f(S)` with :math:`\xi_S = 1 + \sigma z_S`;
    additive: :math:`\tilde f(S) = f(S) + \sigma z_S`. :math:`z_S` has mean 0 and variance 1 (standard Gaussian,
    centred unit exponential, or uniform on :math:`[-\sqrt 3, \sqrt 3]`), is a function of the set only, and is
    independent across distinct sets. All three families are sub-exponential, as the paper requires.

    Args:
        f: the noiseless set function.
        sigma: noise scale :math:`\sigma \ge 0` (standard deviation of :math:`\xi_S` or of the additive term).
        noise: ``"gaussian"``, ``"exponential"`` or ``"uniform"``.
        mode: ``"mult"`` or ``"add"``.
        key: PRNG key fixing the noise realisation (``jax.random.key(seed)``).
        clip: clip :math:`\xi_S` at 0 so that multiplicative values stay non-negative (biases the mean; off by
            default).

    Traceable: the oracle can be built inside ``jax.jit``/``jax.vmap`` with a traced ``sigma`` or ``key`` (a sweep
    over noise levels and realisations in one program, see :func:`~nips25_submodular.noisy_sweep`); a traced
    ``sigma`` is not range-checked.

    Raises:
        ValueError: if a concrete ``sigma`` is negative or not finite, or ``noise``/``mode`` is unknown.
        TypeError: if ``f`` is not a :class:`SetFunction` or ``key`` is not a PRNG key.

    References:
        Bhawalkar, Cai, Feng, Liaw, Lin, "A Unified Approach to Submodular Maximization Under Noise",
        NeurIPS 2025, arXiv:2510.21128 (noise model). Hassidim & Singer, COLT 2017 (multiplicative model).

    Example:
        >>> from nips25_submodular import Modular
        >>> o = PersistentNoisyOracle(Modular([1.0, 2.0]), sigma=0.5, key=jax.random.key(0))
        >>> bool(o([True, True]) == o([True, True]))
        True
    """

    _leaves = ("f", "key", "sigma")
    _static = ("noise", "mode", "clip")

    def __init__(
        self,
        f: SetFunction,
        *,
        sigma: float,
        noise: NoiseFamily = "gaussian",
        mode: NoiseMode = "mult",
        key: jax.Array,
        clip: bool = False,
    ) -> None:
        require_set_function(f)
        if noise not in NOISE_FAMILIES:
            raise ValueError(f"noise must be one of {NOISE_FAMILIES}, got {noise!r}")
        if mode not in ("mult", "add"):
            raise ValueError(f"mode must be 'mult' or 'add', got {mode!r}")
        self.f = f
        self.sigma = jnp.asarray(check_real_or_traced(sigma, "sigma", low=0.0), dtype=jnp.float32)
        self.key = as_key(key)
        self.noise = noise
        self.mode = mode
        self.clip = bool(clip)

    @property
    def n(self) -> int:
        return self.f.n

    def noise_of(self, mask: jax.Array) -> jax.Array:
        """The standardised noise :math:`z_S` of the set ``mask`` (mean 0, variance 1)."""
        return _standard_noise(set_key(self.key, jnp.asarray(mask, dtype=bool)), self.noise)

    def _apply(self, clean: jax.Array, z: jax.Array) -> jax.Array:
        if self.mode == "add":
            return clean + self.sigma * z
        xi = 1.0 + self.sigma * z
        return clean * (jnp.maximum(xi, 0.0) if self.clip else xi)

    def value(self, mask: jax.Array) -> jax.Array:
        mask = jnp.asarray(mask, dtype=bool)
        return self._apply(self.f.value(mask), self.noise_of(mask))

    def gains(self, mask: jax.Array) -> jax.Array:
        r""":math:`\tilde f(S \cup \{i\}) - \tilde f(S)` for all :math:`i`, using ``f``'s closed-form gains."""
        mask = jnp.asarray(mask, dtype=bool)
        clean = self.f.value(mask)
        plus = mask[None, :] | jnp.eye(self.n, dtype=bool)
        noisy_plus = self._apply(clean + self.f.gains(mask), jax.vmap(self.noise_of)(plus))
        return jnp.where(mask, 0.0, noisy_plus - self._apply(clean, self.noise_of(mask)))
