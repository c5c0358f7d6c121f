"""One protocol for every arm (issue #28): one configuration chosen on the validation graphs trains every size,
order and the control; the growth criterion on known inputs; per-graph PCA caps; thread setting restored."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nips25_gfm import TSGNN, load_graph_dir
from nips25_gfm.reproduce import GROWTH_SE, PAPER_PCA, PROFILES, VALIDATION, _grows, _threads


def test_every_arm_trains_with_the_one_chosen_configuration(tmp_path, monkeypatch) -> None:
    import nips25_gfm.reproduce as rep

    seen: list[dict] = []
    real = rep._train_job

    def spy(job):
        seen.append(job)
        return real(job)

    monkeypatch.setattr(rep, "_train_job", spy)
    report = rep.reproduce(profile="tiny", out_dir=tmp_path)
    assert report.package == "gfm" and report.profile == "tiny"
    assert [c.id for c in report.claims] == [
        "zero-shot-beats-ls-ensemble", "above-chance-everywhere", "more-graphs-help", "positive-control-csbm-rises",
        "one-model-any-graph",
    ]  # fmt: skip
    assert all(isinstance(c.holds, bool) for c in report.claims)
    assert (tmp_path / report.figures[0]).is_file()
    cfg = PROFILES["tiny"]
    selection = [j for j in seen if "arm" not in j]
    curve = [j for j in seen if "arm" in j]
    assert {j["held"][0] for j in selection} == set(cfg.validation)
    assert len(curve) == 2 * cfg.orders * len(cfg.sizes)  # real and control, every order and size
    assert {(j["lr"], tuple(j["checkpoints"])) for j in curve} == {
        (report.config["chosen"]["lr"], (report.config["chosen"]["epochs"],))
    }
    for j in curve:  # validation graphs never train or score a claim
        assert not set(cfg.validation) & set(j["train"] + j["held"])
    for order in report.config["orders"].values():
        assert sorted(order) == sorted(cfg.pool)
    assert len(set(map(tuple, report.config["orders"].values()))) == cfg.orders  # distinct random orders


def test_growth_criterion_on_known_inputs() -> None:
    sizes = (1, 3, 9)
    rising = {1: [0.5, 0.55, 0.45], 3: [0.6, 0.62, 0.58], 9: [0.7, 0.72, 0.69]}
    ok, stats = _grows(rising, sizes)
    assert ok and stats["gain"] == pytest.approx(np.mean([0.2, 0.17, 0.24]))
    noisy = {1: [0.5, 0.9, 0.3], 3: [0.55, 0.8, 0.4], 9: [0.6, 0.7, 0.5]}  # mean gain 0.033 < 2 SE = 0.24
    assert not _grows(noisy, sizes)[0]
    dip = {1: [0.5, 0.5, 0.5], 3: [0.3, 0.31, 0.29], 9: [0.7, 0.71, 0.69]}  # a significant drop 1 -> 3
    assert not _grows(dip, sizes)[0] and GROWTH_SE == 2.0
    assert PROFILES["quick"].validation == VALIDATION
    for name in ("quick", "paper"):
        assert PROFILES[name].sizes == (1, 3, 5, 7, 9) and PROFILES[name].orders >= 5
    model = TSGNN(hidden=PROFILES["quick"].hidden)
    assert model.config.n_hops == -1 and model.config.backbone == "mean" and model.config.num_layers == 2


def test_per_graph_pca_caps(tmp_path) -> None:
    rng = np.random.default_rng(0)
    for name, f in (("co_cs", 12), ("cora", 12)):
        np.savez(tmp_path / f"{name}.npz", edge_index=rng.integers(0, 20, (2, 40)), x=rng.normal(size=(20, f)),
                 y=np.arange(20) % 2)  # fmt: skip
    graphs = load_graph_dir(tmp_path, ["co_cs", "cora"], max_features=None, pca={"co_cs": 5})
    assert graphs["co_cs"].num_features == 5 and graphs["cora"].num_features == 12
    assert set(PAPER_PCA) == {"full_cora", "co_cs", "co_physics"}


def test_thread_setting_is_restored() -> None:
    before = torch.get_num_threads()
    with _threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with _threads(None):
        assert torch.get_num_threads() == before


def test_load_graph_dir_rejects_a_malformed_pca_argument(tmp_path):
    with pytest.raises(TypeError, match="pca"):
        load_graph_dir(tmp_path, ["cora"], pca=[("cora", 4)])  # type: ignore[arg-type]
    for bad in (0, -2, 2.5, True, "8"):
        with pytest.raises(ValueError, match="pca"):
            load_graph_dir(tmp_path, ["cora"], pca={"cora": bad})  # type: ignore[dict-item]
