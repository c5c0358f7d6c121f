"""Smoke test of reproduce (tiny profile), the CLI's subcommands and its user-error handling."""

import json

import numpy as np
import pytest
from nips25_treegen.cli import main
from nips25_treegen.reproduce import PROFILES, ReproduceConfig, reproduce


def test_reproduce_tiny_profile_computes_every_claim(tmp_path):
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    ids = [c.id for c in report.claims]
    assert ids == ["valid-samples", "tv-below-baselines", "best-of-m-near-map", "best-of-m-beats-beam"]
    for claim in report.claims:
        assert isinstance(claim.holds, bool) and claim.criterion and claim.measured is not None
    assert 0.0 <= report.claims[0].measured["valid"] <= 1.0
    assert set(report.claims[1].measured) >= {"treegen", "greedy", "kt_best", "uniform", "exact_sampler"}
    assert report.figures and (tmp_path / report.figures[0]).is_file()
    assert report.package == "treegen" and report.profile == "tiny"


def test_reproduce_rejects_unknown_profile(tmp_path):
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", out_dir=tmp_path)
    with pytest.raises(ValueError, match="leaf_counts"):
        ReproduceConfig(leaf_counts=(2, 20))
    with pytest.raises(ValueError, match="decoder"):
        ReproduceConfig(decoder="repair")
    assert set(PROFILES) == {"tiny", "quick", "paper"}


def test_cli_simulate_and_cluster(tmp_path, capsys):
    out = tmp_path / "jets.npz"
    assert main(["simulate", "--n-jets", "3", "--leaves", "5..6", "--out", str(out)]) == 0
    with np.load(out) as data:
        assert data["jet0_leaves"].shape[1] == 4 and data["log_lik"].shape == (3,)
    capsys.readouterr()
    assert main(["cluster", str(out), "--index", "1"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["greedy_log_lik"] <= res["map_log_lik"] + 1e-9 and res["beam_log_lik"] <= res["map_log_lik"] + 1e-9
    assert main(["bench", "--N", "4..5"]) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--n-jets", "0", "--out", "x.npz"],
        ["simulate", "--leaves", "9..3", "--out", "x.npz"],
        ["simulate", "--out", "/no/such/dir/x.npz"],
        ["simulate", "--out", "x.txt"],
        ["cluster", "/no/such/file.npz"],
        ["bench", "--N", "2..30"],
        ["reproduce", "--profile", "huge"],
    ],
)
def test_cli_user_errors_exit_2(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as err:
        main(argv)
    assert err.value.code == 2


def test_cli_cluster_bad_index_exits_2(tmp_path):
    out = tmp_path / "jets.npz"
    main(["simulate", "--n-jets", "1", "--leaves", "4", "--out", str(out)])
    with pytest.raises(SystemExit) as err:
        main(["cluster", str(out), "--index", "5"])
    assert err.value.code == 2


def test_cli_reproduce_decoder_flag_reaches_reproduce(tmp_path, monkeypatch):
    """``reproduce --decoder`` passes the decoder to ``reproduce`` (default: the profile's); a bad one exits 2."""
    import nips25_treegen.cli as cli

    seen = []

    class Stop(Exception):
        pass

    def fake(**kwargs):
        seen.append(kwargs["decoder"])
        raise Stop

    monkeypatch.setattr(cli, "reproduce", fake)
    for argv, expected in ((["--decoder", "assignment"], "assignment"), ([], None)):
        with pytest.raises(Stop):
            main(["reproduce", "--out", str(tmp_path), *argv])
        assert seen[-1] == expected
    with pytest.raises(SystemExit) as err:
        main(["reproduce", "--decoder", "repair", "--out", str(tmp_path)])
    assert err.value.code == 2
    with pytest.raises(ValueError, match="decoder"):
        reproduce(profile="tiny", out_dir=tmp_path, decoder="repair")


def test_quick_profile_drops_the_0_0_decoder_arm(tmp_path, monkeypatch):
    """0.2.2 (issue 43.7; the cut written in the README before its run): ``quick`` runs the 0.1 ``binary`` arm
    beside TreeGen's decoder but not the 0.0 ``independent`` one; a profile without it reports it as absent."""
    from dataclasses import replace

    from nips25_treegen import reproduce as rep

    assert rep.PROFILES["quick"].old_decoders == ("binary",)
    assert rep.PROFILES["tiny"].old_decoders == ("binary", "independent")
    with pytest.raises(ValueError, match="old_decoders"):
        replace(rep.PROFILES["tiny"], old_decoders=("nope",))
    cfg = replace(rep.PROFILES["tiny"], old_decoders=("binary",))
    monkeypatch.setitem(rep.PROFILES, "tiny", cfg)
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    assert set(report.config["arms"]) == {"treegen", "binary_decoder_0.1", "oracle_control"}
    valid = next(c for c in report.claims if c.id == "valid-samples").measured
    assert "valid_binary_decoder_0.1" in valid and "valid_independent_decoder_0.0" not in valid


def test_cli_cluster_empty_file_exits_2_naming_it(tmp_path, capsys):
    """Found in the 0.2.1 fresh-user review: an empty .npz gave numpy's EOFError traceback."""
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    with pytest.raises(SystemExit) as err:
        main(["cluster", str(empty)])
    assert err.value.code == 2 and "empty.npz" in capsys.readouterr().err
