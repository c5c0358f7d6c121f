"""Smoke test of reproduce in its tiny profile, and the command line."""

from __future__ import annotations

import pytest
from nips25_gora.cli import main
from nips25_gora.reproduce import PROFILES, reproduce
from nips25_gora.transfer import (
    CANNOT_ANSWER,
    XI_GRID,
    _combined_verdict,
    _descent_verdict,
    _test_seed,
    _trained_verdict,
    fixed_nets,
)

CLAIMS = {"gora-beats-lora", "init-is-descent", "budget-respected", "init-is-cheap"}


def test_reproduce_tiny_digits_transfer_computes_every_claim_and_the_controls(tmp_path):
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)  # test seeds in 2 spawned worker processes
    assert {c.id for c in report.claims} == CLAIMS | {
        "positive-control",
        "init-is-descent-held-out-xi",
        "init-is-descent-1-over-L",
        "init-is-descent-1-over-L-normalised",
        "shift-init-is-descent-1-over-L",
        "shift-init-is-descent-1-over-L-normalised",
        "fixed-net-init-is-descent-1-over-L",
        "fixed-net-init-is-descent-1-over-L-normalised",
        "shift-positive-control",
        "shift-gora-beats-lora",
    }
    measured = {c.id: c.measured for c in report.claims}
    assert measured["gora-beats-lora"]["n_seeds"] == 2
    assert all(0.0 <= a <= 1.0 for a in measured["positive-control"]["per_seed"]["probe"])
    # the full-rank control: GoRA at r = n equals one SGD step of size xi on the gradient batches
    assert max(measured["init-is-descent"]["control_full_rank_minus_sgd"]) < 1e-5
    held = measured["init-is-descent-held-out-xi"]
    assert all(x in XI_GRID for x in held["xi_gora"] + held["xi_sgd"]) and held["n_seeds"] == 2
    # xi* minimises the validation loss over the grid (seed 0's curve is stored)
    curve = held["val_loss_by_xi_seed0"]["gora"]
    assert curve[f"{held['xi_gora'][0]:g}"] == min(curve.values())
    gap = measured["gora-beats-lora"]
    assert len(gap["test_sampling_variance_per_seed"]) == 2 and gap["test_sampling_share_of_gap_variance"] > 0
    assert isinstance(gap["stable_against_summation_order"], bool)
    # a seed computed in this process equals the one a worker computed: the worker count changes no number
    one = _test_seed(1, PROFILES["tiny"], report.config["lr_search"]["chosen"])
    assert [one["runs"][m]["accuracy"] for m in ("gora", "lora")] == [gap["per_seed"][m][1] for m in ("gora", "lora")]
    assert one["held_out_xi"]["gora_drop"]["grad"] == held["loss_drop"][1]
    assert one["one_over_l"]["gora_drop"]["grad"] == measured["init-is-descent-1-over-L"]["gora"]["per_seed"][1]
    # xi = 1/L: the full-rank control equals the SGD step; the normalised drop is the raw drop / (||G||^2 / 2L)
    shift = measured["shift-init-is-descent-1-over-L"]["gora"]["per_seed"][1]
    assert one["shift_one_over_l"]["gora_drop"]["grad"] == shift
    for cid in ("init-is-descent-1-over-L", "init-is-descent-1-over-L-normalised", "shift-init-is-descent-1-over-L",
                "shift-init-is-descent-1-over-L-normalised"):  # fmt: skip
        m = measured[cid]
        assert max(m["control_full_rank_minus_sgd"]) < 1e-5 and m["n_seeds"] == 2
        assert all(x == pytest.approx(1 / big_l) for x, big_l in zip(m["xi"], m["L"]))
        assert m["verdict"] in (
            "holds",
            "does not hold",
            "cannot answer: the SGD-step control fails the same criterion",
        )
    raw, norm = measured["init-is-descent-1-over-L"], measured["init-is-descent-1-over-L-normalised"]
    for d, n, big_l, g2 in zip(raw["gora"]["per_seed"], norm["gora"]["per_seed"], raw["L"], raw["grad_norm_sq"]):
        assert n == pytest.approx(d / (g2 / (2 * big_l)))
    assert report.config["phase_seconds"]["workers"] == 2
    lr_search = report.config["lr_search"]
    assert set(lr_search["chosen"]) == {"lora", "gora"} and all(v in (1e-3, 1e-2) for v in lr_search["chosen"].values())
    assert report.figures and all((tmp_path / f).is_file() for f in report.figures)
    # README 0.2.6: two fixed nets, each claim per net; the tiny profile's seeds 0, 1 for both parts
    fixed = report.config["fixed_net"]
    assert fixed["pretraining_seeds"] == [0, 1] and fixed["init_seeds"] == [0, 1] == fixed["trained_seeds"]
    for cid in ("fixed-net-init-is-descent-1-over-L", "shift-gora-beats-lora"):
        m = measured[cid]
        assert set(m["per_net"]) == {"0", "1"}
        assert m["verdict"] == _combined_verdict([v["verdict"] for v in m["per_net"].values()])
    for net in measured["fixed-net-init-is-descent-1-over-L"]["per_net"].values():
        assert max(net["control_full_rank_minus_sgd"]) < 1e-5 and net["n_seeds"] == 2
    for k, gap in measured["shift-gora-beats-lora"]["per_net"].items():
        assert set(gap["lr"]) == {"lora", "gora"} and all(v in (1e-3, 1e-2) for v in gap["lr"].values())
        control = measured["shift-positive-control"]["per_net"][k]
        assert control["passes"] == (control["paired_gap"] > 2 * control["paired_gap_se"])


def test_reproduce_tiny_topics_profile_computes_every_claim(tmp_path):
    report = reproduce(profile="tiny-topics", seed=0, out_dir=tmp_path)
    assert report.package == "gora" and report.profile == "tiny-topics"
    assert {c.id for c in report.claims} == CLAIMS
    for claim in report.claims:
        assert isinstance(claim.holds, bool) and claim.criterion and claim.measured is not None
    measured = {c.id: c.measured for c in report.claims}
    assert len(measured["gora-beats-lora"]["per_seed"]["gora"]) == 2
    assert all(0.0 <= a <= 1.0 for a in measured["gora-beats-lora"]["per_seed"]["lora"])
    assert all(x > 0 for x in measured["budget-respected"]["realised_over_budget"])
    assert report.figures and all((tmp_path / f).is_file() for f in report.figures)
    assert report.wall_time_s > 0


def test_reproduce_rejects_unknown_and_missing_paper_inputs(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", seed=0, out_dir=tmp_path)
    monkeypatch.delenv("NIPS25_GORA_MODEL", raising=False)
    with pytest.raises(FileNotFoundError, match="NIPS25_GORA_MODEL"):
        reproduce(profile="paper", seed=0, out_dir=tmp_path)


def test_cli_help_and_bad_arguments(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "reproduce" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--profile", "nope"])
    assert exc.value.code == 2
    capsys.readouterr()
    for flag in ("--n-steps", "--batch-size", "--r-ref", "--max-length"):  # before any model is loaded
        with pytest.raises(SystemExit) as exc:
            main(["init", "--model", "m", "--data", "d.jsonl", "--out", "o", flag, "0"])
        assert exc.value.code == 2
        assert f"argument {flag}: must be an integer >= 1" in capsys.readouterr().err


def test_hessian_spectral_norm_matches_the_explicit_hessian():
    """Power iteration's |lambda|max equals the largest |eigenvalue| of the explicit Hessian (a 304-weight net)."""
    import torch
    from nips25_gora.digits import DIGITS_TARGETS, DigitsNet
    from nips25_gora.transfer import hessian_spectral_norm

    torch.manual_seed(0)
    net = DigitsNet(num_labels=3, hidden=4)
    batches = [{"pixels": torch.rand(8, 64), "labels": torch.randint(0, 3, (8,))} for _ in range(2)]
    got = hessian_spectral_norm(net, batches, seed=1, max_iter=2000, rtol=1e-9)
    shapes = [getattr(net, t).weight.shape for t in DIGITS_TARGETS]
    flat0 = torch.cat([getattr(net, t).weight.detach().flatten() for t in DIGITS_TARGETS]).double()

    def loss(flat):
        weights, i = {}, 0
        for t, shape in zip(DIGITS_TARGETS, shapes):
            weights[f"{t}.weight"] = flat[i : i + shape.numel()].view(shape).float()
            i += shape.numel()
        out = [torch.func.functional_call(net, weights, kwargs=b).loss for b in batches]
        return sum(out) / len(out)

    eig = torch.linalg.eigvalsh(torch.autograd.functional.hessian(loss, flat0))
    top = eig[eig.abs().argmax()]
    assert got["converged"] == 1.0
    assert got["L"] == pytest.approx(float(top.abs()), rel=1e-3)
    assert got["eigenvalue"] == pytest.approx(float(top), rel=1e-3)


def test_fixed_nets_are_the_seeded_pretrainings_and_the_seed_redraws_only_the_split():
    """README 0.2.6: net k is ``pretrain(source, seed=k)`` bit for bit; a test seed redraws the shifted split (and
    the adaptation), never the net's weights."""
    import torch
    from nips25_gora.digits import load_digits_shift, pretrain
    from nips25_gora.transfer import DIGITS_SHIFT

    nets = fixed_nets((0, 1))
    source = load_digits_shift(kind=DIGITS_SHIFT, shots=1, seed=0).source
    again = pretrain(source, seed=0)
    for a, b in zip(nets[0].state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)
    assert not torch.equal(nets[0].state_dict()["fc1.weight"], nets[1].state_dict()["fc1.weight"])
    d0, d1 = (load_digits_shift(kind=DIGITS_SHIFT, shots=5, seed=s) for s in (0, 1))
    assert not torch.equal(d0.train["pixels"], d1.train["pixels"])
    with pytest.raises(ValueError, match="pretraining_seeds"):
        fixed_nets(())
    with pytest.raises(ValueError, match="pretraining_seeds"):
        fixed_nets((0, 0))


@pytest.mark.parametrize(
    ("gora", "sgd", "full_gap", "verdict"),
    [
        ([1.0, 1.1, 0.9], [2.0, 2.1, 1.9], 0.0, "holds"),
        ([1.0, -0.1, 0.9], [2.0, 2.1, 1.9], 0.0, "does not hold"),  # a seed rises
        ([1.0, 0.1, 2.0], [2.0, 2.1, 1.9], 0.0, "does not hold"),  # mean < 2 SD
        ([1.0, 1.1, 0.9], [2.0, 0.1, 4.0], 0.0, CANNOT_ANSWER),  # the SGD control scatters
        ([1.0, 1.1, 0.9], [2.0, 2.1, 1.9], 1e-3, CANNOT_ANSWER),  # full rank is not the SGD step
    ],
)
def test_descent_verdict_needs_its_control(gora, sgd, full_gap, verdict):
    assert _descent_verdict(gora, sgd, [full_gap] * 3) == verdict


@pytest.mark.parametrize(
    ("verdicts", "combined"),
    [
        (["holds", "holds"], "holds"),
        (["holds", "does not hold"], "does not hold"),
        (["holds", CANNOT_ANSWER], "cannot answer"),
        (["does not hold", CANNOT_ANSWER], "does not hold"),
        ([CANNOT_ANSWER, CANNOT_ANSWER], "cannot answer"),
    ],
)
def test_a_fixed_net_claim_holds_only_on_every_net(verdicts, combined):
    assert _combined_verdict(verdicts) == combined
    with pytest.raises(ValueError, match="verdicts"):
        _combined_verdict([])


def test_trained_verdict_cannot_answer_when_saturated_or_without_control():
    gap = {"saturated_arms": [], "paired_gap": 0.05, "paired_gap_se": 0.01}
    assert _trained_verdict(gap, True) == "holds"
    assert _trained_verdict(gap | {"paired_gap": 0.01}, True) == "does not hold"
    assert _trained_verdict(gap, False).startswith("cannot answer: the positive control")
    assert _trained_verdict(gap | {"saturated_arms": ["gora"]}, True).startswith("cannot answer: saturated")
