"""Scale-out (issue 42): public functions trace under jit/vmap, markets are pytrees, sharded batches stay sharded."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nips25_market import (
    LMSR,
    MyopicTrader,
    SmoothQuadratic,
    VolumeLiquidity,
    realized_loss,
    replay,
    replay_batch,
    simulate,
    simulate_adaptive,
    simulate_batch,
    worst_case_spend,
    worst_outcome_loss,
)
from nips25_market.traders import budget_trade

TRADES = np.random.default_rng(3).normal(size=(12, 3)) * 2.0


def test_losses_are_traceable_arrays():
    """realized_loss / worst_outcome_loss return JAX scalars, equal under jit, and vmap over outcomes and traces."""
    tr = replay(SmoothQuadratic(LMSR(3, b=2.0)), TRADES)
    loss = realized_loss(tr, 1)
    assert isinstance(loss, jax.Array) and loss.shape == ()
    hand = float(tr.q[-1, 1] - np.sum(np.asarray(tr.payments)))
    assert float(loss) == pytest.approx(hand, abs=1e-12)
    assert float(jax.jit(realized_loss)(tr, jnp.int32(1))) == pytest.approx(hand, abs=1e-12)
    per_outcome = jax.vmap(realized_loss, in_axes=(None, 0))(tr, jnp.arange(3))
    assert float(worst_outcome_loss(tr)) == pytest.approx(float(per_outcome.max()), abs=1e-12)
    batch = replay_batch(LMSR(3, b=2.0), np.stack([TRADES, -TRADES]))
    np.testing.assert_allclose(
        np.asarray(worst_outcome_loss(batch)),
        [float(worst_outcome_loss(replay(LMSR(3, b=2.0), t))) for t in (TRADES, -TRADES)],
        atol=1e-12,
    )
    with pytest.raises(ValueError, match="outcome must be in"):
        realized_loss(tr, jnp.int32(3))
    with pytest.raises(TypeError, match="outcome must be an integer"):
        realized_loss(tr, jnp.float64(1.0))


def test_vmap_over_liquidity_equals_loop():
    """LMSR(b=traced) is accepted: vmap over b of replay/simulate equals a Python loop over b."""
    bs = jnp.array([0.5, 2.0, 7.0])
    mu = np.tile([0.2, 0.3, 0.5], (30, 1))
    got = jax.vmap(lambda b: worst_outcome_loss(replay(SmoothQuadratic(LMSR(3, b=b)), TRADES)))(bs)
    want = [float(worst_outcome_loss(replay(SmoothQuadratic(LMSR(3, b=float(b))), TRADES))) for b in bs]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    prices = jax.jit(jax.vmap(lambda b: simulate(SmoothQuadratic(LMSR(3, b=b)), mu).prices[-1]))(bs)
    for b, p in zip(bs, prices):
        ref = simulate(SmoothQuadratic(LMSR(3, b=float(b))), mu).prices[-1]
        np.testing.assert_allclose(np.asarray(p), np.asarray(ref), atol=1e-12)
    adaptive = jax.vmap(lambda b0: simulate_adaptive("lmsr", mu, VolumeLiquidity(b0=b0, alpha=0.1))[0].payments)(bs)
    for b, pays in zip(bs, adaptive):
        ref = simulate_adaptive("lmsr", mu, VolumeLiquidity(b0=float(b), alpha=0.1))[0].payments
        np.testing.assert_allclose(np.asarray(pays), np.asarray(ref), rtol=1e-12, atol=1e-14)


def test_markets_pass_through_jit_as_arguments():
    """A market is a pytree: one compiled function serves any b; a concrete jnp b is checked like a float."""
    f = jax.jit(lambda mm, t: replay(mm, t).payments)
    for b in (1.0, 3.0):
        ref = replay(LMSR(3, b=b), TRADES).payments
        np.testing.assert_allclose(np.asarray(f(LMSR(3, b=b), TRADES)), np.asarray(ref))
    with pytest.raises(ValueError, match="b must be finite and > 0"):
        LMSR(3, b=jnp.asarray(-1.0))
    with pytest.raises(TypeError, match="b must be a real scalar"):
        LMSR(3, b=jnp.ones(2))


def test_budget_trade_matches_slsqp():
    """The duality/bisection budget solver equals SLSQP on the epigraph form and spends exactly the budget."""
    mm = SmoothQuadratic(LMSR(4, b=1.5))
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = rng.normal(size=4) * 2.0
        mu = rng.dirichlet(np.ones(4))
        free = (mu - np.asarray(mm.price(q))) / mm.L
        budget = 0.3 * float(worst_case_spend(mm, q, free))
        r = budget_trade(mm, q, mu, budget)
        ref = MyopicTrader(mu, budget=budget)._solve_budget(mm, jnp.asarray(q))
        trader = MyopicTrader(mu, budget=budget)
        assert float(worst_case_spend(mm, q, r)) == pytest.approx(budget, rel=1e-9)
        assert float(worst_case_spend(mm, q, r)) <= budget * (1 + 1e-12)
        assert float(trader.profit(mm, q, r)) >= float(trader.profit(mm, q, ref)) - 1e-9
        np.testing.assert_allclose(np.asarray(r), np.asarray(ref), atol=1e-5)


def test_budget_traders_scan_jit_and_vmap():
    """Budgeted traders run in one lax.scan: simulate == the per-trader loop, and vmap over budgets works."""
    mm = SmoothQuadratic(LMSR(4, b=5.0))
    mu = np.array([0.1, 0.2, 0.3, 0.4])
    traders = [MyopicTrader(mu, budget=0.5)] * 40
    tr = simulate(mm, traders)
    # the per-trader loop of best_trade (one compiled budget solve, called eagerly)
    q, ref = jnp.zeros(4), []
    for t in traders:
        ref.append(t.best_trade(mm, q))
        q = q + ref[-1]
    np.testing.assert_allclose(np.asarray(tr.trades), np.asarray(jnp.stack(ref)), atol=1e-12)
    batch = simulate_batch(mm, np.tile(mu, (1, 40, 1)), budget=0.5)
    np.testing.assert_allclose(np.asarray(batch.trades[0]), np.asarray(tr.trades), atol=1e-12)
    finals = jax.vmap(lambda bud: simulate(mm, [MyopicTrader(mu, budget=bud)] * 40).prices[-1])(jnp.array([0.1, 0.5]))
    np.testing.assert_allclose(np.asarray(finals[1]), np.asarray(tr.prices[-1]), atol=1e-12)
    with pytest.raises(ValueError, match="budget in simulate_batch needs"):
        simulate_batch(LMSR(4, b=5.0), np.tile(mu, (1, 3, 1)), budget=0.5)


SHARDED = """
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from nips25_market import LMSR, MyopicTrader, SmoothQuadratic, replay, replay_batch, simulate, simulate_batch
from nips25_market import worst_outcome_loss

assert len(jax.devices()) == 2, jax.devices()
mesh = Mesh(np.array(jax.devices()), ("s",))
rows = NamedSharding(mesh, P("s"))

def split(x):
    assert len(x.sharding.device_set) == 2 and not x.sharding.is_fully_replicated, x.sharding
    assert all(s.data.shape[0] == x.shape[0] // 2 for s in x.addressable_shards), x.sharding
    return np.asarray(x)

rng = np.random.default_rng(0)
mm = SmoothQuadratic(LMSR(3, b=2.0))
trades = rng.normal(size=(4, 12, 3))
tr = replay_batch(mm, jax.device_put(trades, rows))
for field in ("q", "prices", "payments"):
    got, want = split(getattr(tr, field)), np.stack([np.asarray(getattr(replay(mm, t), field)) for t in trades])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
loss = split(worst_outcome_loss(tr))
np.testing.assert_allclose(loss, [float(worst_outcome_loss(replay(mm, t))) for t in trades], rtol=1e-12)

mus = rng.dirichlet(np.ones(3), size=4)
beliefs = np.repeat(mus[:, None], 15, axis=1)
sim = simulate_batch(mm, jax.device_put(beliefs, rows), budget=0.3)
loop = np.stack([np.asarray(simulate(mm, [MyopicTrader(m, budget=0.3)] * 15).prices) for m in mus])
np.testing.assert_allclose(split(sim.prices), loop, atol=1e-12)

bs = jax.device_put(np.array([0.5, 1.0, 2.0, 4.0]), rows)
swept = jax.jit(jax.vmap(lambda b: worst_outcome_loss(replay(LMSR(3, b=b), trades[0]))))(bs)
want = [float(worst_outcome_loss(replay(LMSR(3, b=float(b)), trades[0]))) for b in np.asarray(bs)]
np.testing.assert_allclose(split(swept), want, rtol=1e-12)
print("ok")
"""


def test_sharded_batch_stays_sharded_and_equals_loop():
    """Under 2 host devices, sharded trades/beliefs/liquidity give sharded outputs equal to a per-item loop."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SHARDED)], capture_output=True, text=True, env=env, timeout=240
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout + proc.stderr
