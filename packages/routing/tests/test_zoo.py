"""digits-zoo's fit does not depend on the caller's BLAS/OpenMP thread count (0.2.4)."""

from __future__ import annotations

import numpy as np
from nips25_routing import zoo
from threadpoolctl import threadpool_info, threadpool_limits


def test_digits_zoo_fit_is_bit_identical_whatever_the_callers_thread_pool(monkeypatch):
    """Fitted under a caller's pool of 1 and of 2 threads, the zoo is the same bytes, and it ran on 1 thread.

    Without the limit the two fits differed (mlp-128's probabilities by ~4e-12 on this seed, measured in 0.2.3),
    so the cached zoo depended on the machine's thread setting.
    """
    inner, seen = zoo._fit_zoo_models, []

    def spy(*args):
        seen.append({pool["num_threads"] for pool in threadpool_info()})
        return inner(*args)

    monkeypatch.setattr(zoo, "_fit_zoo_models", spy)
    fits = {}
    for threads in (1, 2):
        with threadpool_limits(limits=threads):
            fits[threads] = zoo._fit_zoo(0, 0.3, "proba")
    assert seen == [{1}, {1}]
    for key in ("x", "quality", "cost"):
        np.testing.assert_array_equal(fits[1][key], fits[2][key])
