"""Smoke test of reproduce (tiny profile), the command line, and the README quickstart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from nips25_fedrw.cli import main
from nips25_fedrw.reproduce import reproduce

CLAIMS = {"fedrw-lower-perplexity", "fedrw-lower-perplexity-every-rate", "fedrw-lower-perplexity-non-iid",
          "ppmpr-faster-than-ep-mpd", "ppmpr-exact-frequencies", "client-view-reveals-only-aggregates",
          "duplicates-hurt-control", "ppmpr-faster-than-ep-mpd-tree"}  # fmt: skip


def test_reproduce_tiny_profile_computes_every_claim(tmp_path):
    report = reproduce(profile="tiny", seed=0, out_dir=tmp_path)
    assert report.package == "fedrw" and report.profile == "tiny"
    assert {c.id for c in report.claims} == CLAIMS
    for claim in report.claims:
        assert isinstance(claim.holds, bool) and claim.criterion and claim.measured is not None
    measured = {c.id: c.measured for c in report.claims}
    ppl = measured["fedrw-lower-perplexity"]["mean_ppl"]
    assert set(ppl) == {"none", "hard_ep_mpd", "fedrw", "fedrw_inv"} and all(1.0 < v < 258.0 * 2 for v in ppl.values())
    steps = measured["fedrw-lower-perplexity"]["steps"]
    assert len(set(steps.values())) == 1  # equal optimisation steps in every arm
    assert set(measured["fedrw-lower-perplexity-every-rate"]) == {"IID 0.1", "IID 0.3"}
    control = measured["duplicates-hurt-control"]["hot"]
    assert control["none_test_over_train_ppl"] > 0 and isinstance(control["control_seen"], bool)
    privacy = measured["client-view-reveals-only-aggregates"]
    assert privacy["deduced_counts_true"] is True and privacy["exactly_revealed_counts"] > 0
    assert set(measured["fedrw-lower-perplexity-non-iid"]) == {"non-IID 0.3"}
    assert measured["fedrw-lower-perplexity-non-iid"]["non-IID 0.3"]["mean_ppl"]["fedrw"] > 1.0
    speed = measured["ppmpr-faster-than-ep-mpd"]
    assert set(speed["ratio_best_ep_mpd_over_ppmpr"]) == {"2", "3"}  # EP-MPD's own Type I/II (design 0.2.1)
    for k in ("2", "3"):
        best = min(speed["ratio_type1_over_ppmpr"][k], speed["ratio_type2_over_ppmpr"][k])
        assert speed["ratio_best_ep_mpd_over_ppmpr"][k] == best > 0
        assert speed["per_k"][k]["exact_same_kept"] is True  # Type I, Type II, the tree and the TP agree
    assert set(measured["ppmpr-faster-than-ep-mpd-tree"]["ratio_parallel"]) == {"2", "3"}  # the old design
    assert measured["ppmpr-exact-frequencies"]["exact"] is True
    assert report.figures == ["fedrw.png"] and (tmp_path / "fedrw.png").is_file()
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", seed=0, out_dir=tmp_path)


def test_cli_help_and_bad_arguments_exit_2(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0 and "simulate" in capsys.readouterr().out
    bad = [
        ["reproduce", "--profile", "nope"],
        ["simulate", "--clients", "1"],
        ["simulate", "--items", "0"],
        ["simulate", "--dup-rate", "-1"],
        ["simulate", "--data", str(tmp_path / "missing.txt"), str(tmp_path / "missing2.txt")],
        ["simulate", "--items", "100000"],
        ["simulate", "--count-cap", "0"],
        ["simulate", "--count-cap", "100000"],
    ]
    for argv in bad:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("nips25-fedrw") and "error" in err[-1], argv
        if argv[0] == "simulate":  # the subcommand's own usage and prefix (review finding, 0.2.2)
            assert err[-1].startswith("nips25-fedrw simulate: error"), (argv, err)


def test_readme_quickstart_runs():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = re.search(r"## Quickstart\n\n```python\n(.*?)```", readme, re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(compile(block.group(1), "README.md", "exec"), namespace)
    assert namespace["res"].freq[0].tolist() == [3, 3, 1, 3]  # type: ignore[attr-defined]


def test_cli_simulate_runs_client_processes_on_user_files(tmp_path, capsys):
    """`nips25-fedrw simulate --data a b c` starts one process per file and reports exact frequencies."""
    import json

    texts = ["the rose\nsummer day\nthe rose\n", "summer day\nonly b\n", "the rose\nonly c\n\n"]
    paths = []
    for name, text in zip("abc", texts):
        path = tmp_path / f"{name}.txt"
        path.write_text(text)
        paths.append(str(path))
    assert main(["simulate", "--data", *paths, "--timeout", "120"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["clients"] == 3 and summary["samples"] == [3, 2, 2]
    assert summary["frequencies_equal_plaintext_counts"] is True and summary["in_process_agrees"] is True
    assert summary["max_frequency"] == 3
    # count-encoded PSI with T = 1: "the rose" (2 copies at a, 1 at c) counts 2 + 1 at a, min(2, 1) + 1 at c
    assert main(["simulate", "--data", *paths, "--timeout", "120", "--count-cap", "1"]) == 0
    capped = json.loads(capsys.readouterr().out)
    assert capped["count_cap"] == 1 and capped["frequencies_equal_plaintext_counts"] is True
    assert capped["in_process_agrees"] is True and capped["max_frequency"] == 3


def test_cli_simulate_bad_timeout_seed_encoding_and_failed_run_exit_2(capsys, tmp_path, monkeypatch):
    """Review fix: --timeout 0/nan/-1, --seed -1, a non-UTF-8 --data file and a timed-out run were tracebacks."""
    good = tmp_path / "good.txt"
    good.write_text("a line\n")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\xfa\n")
    bad = [
        (["simulate", "--timeout", "0"], "--timeout"),
        (["simulate", "--timeout", "nan"], "--timeout"),
        (["simulate", "--timeout", "-1"], "--timeout"),
        (["simulate", "--seed", "-1"], "--seed"),
        (["simulate", "--data", str(good), str(binary)], "--data"),
    ]

    def _fail(*args, **kwargs):
        raise RuntimeError("client process 1 failed or timed out after 0.1 s:\nTraceback ...")

    import sys

    import nips25_fedrw.simulate  # noqa: F401 - the module, which the package's `simulate` function shadows

    monkeypatch.setattr(sys.modules["nips25_fedrw.simulate"], "simulate", _fail)
    bad.append((["simulate", "--clients", "2", "--items", "4"], "--timeout"))
    for argv, name in bad:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("nips25-fedrw") and name in err[-1] and "Traceback" not in err[-1], argv


def test_figure_is_not_written_by_a_non_main_rank(tmp_path, monkeypatch):
    """Issue 42: the figure write is guarded at the write itself (RANK=1 writes nothing; rank 0 writes it)."""
    from nips25_fedrw.reproduce import ARMS, PRE_METHODS, _figure

    quality = {(0.3, True): [{arm: 10.0 + i for i, arm in enumerate(ARMS)}] * 2}
    timing = {"parallel_median": 1.0, "parallel_min": 0.5, "parallel_max": 2.0}
    pre = {k: dict.fromkeys(PRE_METHODS, timing) for k in (2, 4)}
    monkeypatch.setenv("RANK", "1")
    _figure(quality, pre, tmp_path / "rank1.png")
    assert not (tmp_path / "rank1.png").exists()
    monkeypatch.setenv("RANK", "0")
    _figure(quality, pre, tmp_path / "rank0.png")
    assert (tmp_path / "rank0.png").is_file()


def test_quality_units_in_two_worker_processes_equal_one_process():
    """0.2.2: the quick profile spreads its (setting, seed) units over 2 spawned processes; results are unchanged."""
    from nips25_fedrw.reproduce import HEADLINE, HOT, PROFILES, _quality_units

    cfg = PROFILES["tiny"]
    one = _quality_units(cfg, 0, (HEADLINE, HOT), 1)
    two = _quality_units(cfg, 0, (HEADLINE, HOT), 2)
    assert list(one) == list(two) == [HEADLINE, HOT]
    assert one == two  # every perplexity, step count and size, bit for bit
    with pytest.raises(ValueError, match="workers"):
        reproduce(profile="tiny", seed=0, out_dir=Path("unused"), workers=0)
