"""Smoke test of reproduce (tiny profile), determinism, the CLI and the contrastive encoder."""

import json

import numpy as np
import pytest
from nips25_tmex.cli import main
from nips25_tmex.encoder import EncoderConfig, train_content_encoder
from nips25_tmex.reproduce import reproduce
from nips25_tmex.simulation import FiveLatentSCM

from nips25_shared import Report


@pytest.fixture(scope="module")
def tiny_reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("rep")
    return reproduce(profile="tiny", seed=0, out_dir=out), reproduce(profile="tiny", seed=0, out_dir=out), out


def test_reproduce_tiny_report_structure(tiny_reports):
    report, _, out = tiny_reports
    assert isinstance(report, Report) and report.package == "tmex" and report.profile == "tiny"
    ids = {c.id for c in report.claims}
    assert {"tmex-ranks-measurement-kinds", "tmex-zero-with-unbiased-ate", "gcm-faster-than-kci"} <= ids
    for claim in report.claims:
        assert isinstance(claim.holds, bool) and claim.criterion and claim.measured is not None
    five = next(c for c in report.claims if c.id == "tmex-zero-with-unbiased-ate").measured
    assert set(five) == {"A", "B", "C", "oracle", "oracle_C"}
    control = next(c for c in report.claims if c.id == "tmex-zero-with-unbiased-ate-clean-control").measured
    assert set(control) == {"clean", "clean_corrupted"}
    assert all(0 <= five[m]["mean_tmex"] <= 3 for m in five)
    assert (out / report.figures[0]).is_file()


def test_reproduce_is_deterministic(tiny_reports):
    first, second, _ = tiny_reports
    for a, b in zip(first.claims, second.claims):
        if a.id != "gcm-faster-than-kci":  # wall times differ; everything else is seeded
            assert a.measured == b.measured


def test_encoder_learns_the_shared_content():
    """A few hundred InfoNCE steps make z0_hat far more correlated with z0 than an untrained encoder."""
    scm = FiveLatentSCM()
    z = scm.sample(2000, np.random.default_rng(1))
    trained = train_content_encoder(EncoderConfig(steps=150, batch_size=128, hidden=32), seed=0)
    untrained = train_content_encoder(EncoderConfig(steps=1, batch_size=128, hidden=32), seed=0)
    r_trained = abs(np.corrcoef(trained.encode(z), z[:, 0])[0, 1])
    r_untrained = abs(np.corrcoef(untrained.encode(z), z[:, 0])[0, 1])
    assert r_trained > 0.7 and r_trained > r_untrained + 0.2
    assert np.mean(trained.losses[-10:]) < np.mean(trained.losses[:10])


def test_cli_score_and_errors(tmp_path, capsys):
    rng = np.random.default_rng(0)
    z = rng.normal(size=(300, 2))
    np.save(tmp_path / "z.npy", z)
    np.save(tmp_path / "h.npy", z.sum(axis=1, keepdims=True).repeat(2, axis=1))
    assert main(["score", "--latents", str(tmp_path / "z.npy"), "--representation", str(tmp_path / "h.npy")]) == 0
    assert json.loads(capsys.readouterr().out)["score"] == 2
    for flags, match in [
        (["--latents", str(tmp_path / "none.npy"), "--representation", str(tmp_path / "h.npy")], "--latents: no such"),
        (["--latents", str(tmp_path / "z.npy"), "--representation", str(tmp_path / "gone.npy")], "--representation"),
        (["--latents", str(tmp_path / "bad.npy"), "--representation", str(tmp_path / "h.npy")], "cannot read"),
        (["--latents", str(tmp_path / "z.npy"), "--representation", str(tmp_path / "h.npy"), "--alpha", "2"], "alpha"),
        (
            ["--latents", str(tmp_path / "z.npy"), "--representation", str(tmp_path / "short.npy")],
            "--representation " + str(tmp_path / "short.npy") + " has 299 rows but --latents",
        ),
    ]:
        np.save(tmp_path / "short.npy", z[:299])
        (tmp_path / "bad.npy").write_text("not an array")
        with pytest.raises(SystemExit) as exc:
            main(["score", *flags])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert match in err and "Traceback" not in err
    assert main(["demo", "--k", "3", "--n", "100", "--reps", "1", "-q"]) == 0
    assert "| 3 | full |" in capsys.readouterr().out


def test_cli_score_reads_a_csv_with_a_header_row_and_names_an_empty_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    z = rng.normal(size=(100, 2))
    np.savetxt(tmp_path / "z.csv", z, delimiter=",", header="z0,z1", comments="")
    np.savetxt(tmp_path / "h.csv", z, delimiter=",")
    assert main(["score", "--latents", str(tmp_path / "z.csv"), "--representation", str(tmp_path / "h.csv")]) == 0
    assert json.loads(capsys.readouterr().out)["score"] == 0
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(SystemExit) as exc:
        main(["score", "--latents", str(tmp_path / "empty.csv"), "--representation", str(tmp_path / "h.csv")])
    assert exc.value.code == 2
    assert "--latents: empty.csv holds no data" in capsys.readouterr().err.replace(str(tmp_path) + "/", "")
