"""Every public entry point rejects bad input with an error naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_routing import (
    ANNEstimator,
    BatchSplitRouter,
    BudgetLedger,
    GreedyRouter,
    HistoryStore,
    PORTConfig,
    PORTRouter,
    RandomRouter,
    digits_zoo,
    dual_objective,
    fit_dual,
    load_routerbench,
    lp_oracle,
    simulate,
    split_budget,
    total_budget,
)

from .conftest import make_history

GOOD_D = np.array([[0.5, 0.2], [0.1, 0.9]])
GOOD_G = np.array([[1.0, 2.0], [1.0, 2.0]])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"embeddings": np.zeros((0, 2))}, "embeddings"),
        ({"embeddings": np.full((2, 2), np.nan)}, "embeddings"),
        ({"quality": np.array([[0.5, 1.5], [0.1, 0.2]])}, "quality"),
        ({"quality": np.zeros((3, 2))}, "quality"),
        ({"cost": -GOOD_G}, "cost"),
        ({"cost": np.full((2, 2), np.inf)}, "cost"),
        ({"models": ["a", "a"]}, "models"),
    ],
)
def test_history_store_rejects_bad_arrays(kwargs, match):
    args = {"embeddings": np.eye(2), "quality": GOOD_D, "cost": GOOD_G, "models": ["a", "b"]} | kwargs
    with pytest.raises(ValueError, match=match):
        HistoryStore(**args)


def test_estimator_rejects_bad_parameters_and_queries(history):
    with pytest.raises(ValueError, match="backend"):
        ANNEstimator(history, backend="annoy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be <="):
        ANNEstimator(history, k=10_000)
    with pytest.raises(ValueError, match="k must be >= 1"):
        ANNEstimator(history, k=0)
    with pytest.raises(ValueError, match="ef_search"):
        ANNEstimator(history, k=20, ef_search=10)
    with pytest.raises(TypeError, match="history"):
        ANNEstimator(np.eye(3))  # type: ignore[arg-type]
    est = ANNEstimator(history, backend="faiss-flat")
    with pytest.raises(ValueError, match="queries"):
        est.estimate(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="queries"):
        est.estimate(np.full((1, 8), np.inf))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"eps": 0.0}, "eps"),
        ({"eps": 1.0}, "eps"),
        ({"gamma_max": -1.0}, "gamma_max"),
        ({"solver": "cvxpy"}, "solver"),
    ],
)
def test_port_config_rejects_out_of_range_hyper_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PORTConfig(**kwargs)


def test_port_router_rejects_bad_arguments(estimator):
    with pytest.raises(ValueError, match="budgets"):
        PORTRouter(estimator, [1.0, 2.0], n_total=10)
    with pytest.raises(ValueError, match="budgets"):
        PORTRouter(estimator, [1.0, -2.0, 1.0], n_total=10)
    with pytest.raises(ValueError, match="n_total"):
        PORTRouter(estimator, [1.0, 1.0, 1.0], n_total=0)
    with pytest.raises(TypeError, match="estimator"):
        PORTRouter("faiss", [1.0, 1.0, 1.0], n_total=10)  # type: ignore[arg-type]
    router = PORTRouter(estimator, [1.0, 1.0, 1.0], n_total=10)
    with pytest.raises(ValueError, match="embeddings"):
        router.route(np.zeros((0, 8)))
    with pytest.raises(ValueError, match="embeddings.*all-zero"):
        router.route(np.zeros((1, 8)))
    with pytest.raises(ValueError, match="embeddings"):
        router.route(np.zeros((2, 5)))


def test_dual_and_lp_reject_bad_instances():
    with pytest.raises(ValueError, match="g_hat"):
        fit_dual(GOOD_D, GOOD_G[:1], [1.0, 1.0])
    with pytest.raises(ValueError, match="budgets"):
        fit_dual(GOOD_D, GOOD_G, [1.0])
    with pytest.raises(ValueError, match="eps"):
        fit_dual(GOOD_D, GOOD_G, [1.0, 1.0], eps=2.0)
    with pytest.raises(ValueError, match="alpha"):
        fit_dual(GOOD_D, GOOD_G, [1.0, 1.0], alpha=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="unbounded"):
        fit_dual(GOOD_D, GOOD_G, [0.0, 0.0], alpha=1.0, eps=1.0, clip_zero=False, gamma_max=None)
    with pytest.raises(ValueError, match="gamma"):
        dual_objective([-1.0, 0.0], GOOD_D, GOOD_G, [1.0, 1.0])
    with pytest.raises(ValueError, match="cost"):
        lp_oracle(GOOD_D, -GOOD_G, [1.0, 1.0])


def test_budget_functions_and_ledger_reject_bad_input():
    with pytest.raises(ValueError, match="kind"):
        split_budget("extreme", [1.0], [1.0], 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cost_mean"):
        split_budget("weighted", [1.0, 1.0], [1.0, 0.0], 1.0)
    with pytest.raises(ValueError, match="total"):
        split_budget("weighted", [1.0], [1.0], -1.0)
    with pytest.raises(ValueError, match="multiple"):
        total_budget(GOOD_G, 0.0)
    ledger = BudgetLedger([1.0, 1.0])
    with pytest.raises(ValueError, match="actions"):
        ledger.charge([0, 3], [0.1, 0.1])
    with pytest.raises(ValueError, match="costs"):
        ledger.charge([0, 1], [0.1, np.nan])


def test_baselines_and_simulate_reject_bad_input(estimator):
    with pytest.raises(ValueError, match="kind"):
        GreedyRouter(estimator, [1.0, 1.0, 1.0], kind="speed")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="time_limit"):
        BatchSplitRouter(estimator, [1.0, 1.0, 1.0], time_limit=0.0)
    with pytest.raises(ValueError, match="n_models"):
        RandomRouter(0)
    router = RandomRouter(3)
    emb = np.zeros((4, 8))
    with pytest.raises(ValueError, match="cost"):
        simulate(router, emb, np.zeros((4, 3)), np.zeros((4, 2)), [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="batch_size"):
        simulate(router, emb, np.zeros((4, 3)), np.zeros((4, 3)), [1.0, 1.0, 1.0], batch_size=0)
    with pytest.raises(ValueError, match="embeddings"):
        simulate(router, emb[:2], np.zeros((4, 3)), np.zeros((4, 3)), [1.0, 1.0, 1.0])


def test_data_loaders_reject_missing_or_malformed_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="path"):
        load_routerbench(tmp_path / "missing.pkl")
    bad = tmp_path / "table.csv"
    bad.write_text("prompt,a\nhi,1\n")
    with pytest.raises(ValueError, match="total_cost"):
        load_routerbench(bad)
    with pytest.raises(ValueError, match="n_stream"):
        digits_zoo(n_stream=0)
    with pytest.raises(ValueError, match="fit_fraction"):
        digits_zoo(fit_fraction=0.95)


@settings(max_examples=30, deadline=None)
@given(bad=st.sampled_from([np.nan, np.inf, -np.inf]), row=st.integers(0, 9), col=st.integers(0, 7))
def test_any_non_finite_query_entry_is_rejected(bad, row, col):
    est = ANNEstimator(make_history(0, n=60), backend="faiss-flat")
    q = np.ones((10, 8))
    q[row, col] = bad
    with pytest.raises(ValueError, match="queries"):
        est.estimate(q)


def test_port_hyper_parameter_types_are_checked_and_numpy_scalars_accepted(estimator):
    """numpy floats are numbers; bools are not numbers, strings are not bools; seed is a non-negative int."""
    router = PORTRouter(estimator, [1.0, 1.0, 1.0], n_total=10, alpha=np.float32(1e-4), gamma_max=np.float64(1))
    assert isinstance(router.config.alpha, float) and router.config.alpha == pytest.approx(1e-4)
    for kwargs, exc, name in [
        ({"alpha": True}, TypeError, "alpha"), ({"gamma_max": "1"}, TypeError, "gamma_max"),
        ({"clip_zero": "no"}, TypeError, "clip_zero"), ({"learn_drop": "no"}, TypeError, "learn_drop"),
        ({"seed": None}, TypeError, "seed"), ({"seed": 1.7}, TypeError, "seed"), ({"seed": -1}, ValueError, "seed"),
    ]:  # fmt: skip
        with pytest.raises(exc, match=name):
            PORTRouter(estimator, [1.0, 1.0, 1.0], n_total=10, **kwargs)


def test_all_zero_embeddings_are_rejected_naming_the_argument(history):
    emb = history.embeddings.copy()
    emb[3] = 0.0
    with pytest.raises(ValueError, match="embeddings.*all-zero"):
        HistoryStore(emb, history.quality, history.cost)
    with pytest.raises(ValueError, match="queries.*all-zero"):
        ANNEstimator(history, backend="faiss-flat").estimate(np.zeros((1, 8)))
