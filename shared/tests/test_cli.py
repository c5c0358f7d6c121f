import argparse
import json

import pytest

from nips25_shared import Claim, Report, add_common_arguments, positive_int, run_reproduce, seed_int


def _reproduce(*, profile, seed, out_dir):
    import numpy as np

    x = float(np.random.default_rng(seed).normal())
    return Report(
        package="demo",
        title="Demo",
        profile=profile,
        seed=seed,
        config={"x": x},
        claims=[
            Claim(
                id="x-finite",
                statement="x is finite.",
                paper=None,
                measured=x,
                criterion="isfinite(x)",
                holds=bool(np.isfinite(x)),
                scale_note="none",
            )
        ],
        wall_time_s=0.0,
    )


def test_reproduce_run_writes_report_and_is_deterministic(tmp_path, capsys):
    parser = add_common_arguments(argparse.ArgumentParser(), slug="demo")
    outs = []
    for sub in ("a", "b"):
        args = parser.parse_args(["-q", "--seed", "5", "--out", str(tmp_path / sub)])
        run_reproduce(_reproduce, args)
        outs.append(json.loads((tmp_path / sub / "results.json").read_text()))
    assert outs[0]["claims"] == outs[1]["claims"] and outs[0]["seed"] == 5
    assert "1/1 claims hold" in capsys.readouterr().out


def test_defaults():
    args = add_common_arguments(argparse.ArgumentParser(), slug="demo").parse_args([])
    assert (args.profile, args.seed, str(args.out)) == ("quick", 0, "reports/demo")


def test_custom_profiles_accepted_and_first_is_default():
    parser = add_common_arguments(argparse.ArgumentParser(), slug="demo", profiles=("quick", "full", "paper"))
    assert parser.parse_args([]).profile == "quick"
    assert parser.parse_args(["--profile", "full"]).profile == "full"


def test_unknown_profile_is_a_usage_error(capsys):
    import pytest

    parser = add_common_arguments(argparse.ArgumentParser(), slug="demo")
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["--profile", "full"])
    assert exc.value.code == 2 and "--profile" in capsys.readouterr().err


def test_bad_profiles_argument_names_it():
    import pytest

    for bad in ((), ("quick", "quick"), ("",)):
        with pytest.raises(ValueError, match="profiles"):
            add_common_arguments(argparse.ArgumentParser(), slug="demo", profiles=bad)


def test_module_entry_point_writes_summary(tmp_path):
    """``python -m nips25_shared summarize DIR`` writes DIR/SUMMARY.md."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "nips25_shared", "summarize", str(tmp_path), "--packages", "demo"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert (tmp_path / "SUMMARY.md").is_file()
    assert "RuntimeWarning" not in out.stderr


@pytest.mark.parametrize("bad", ["-1", "4294967296", "1.5", "abc"])
def test_bad_seed_is_a_one_line_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = add_common_arguments(argparse.ArgumentParser(prog="demo"), slug="demo")
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["--seed", bad])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--seed" in err and "[0, 2**32 - 1]" in err and "Traceback" not in err


def test_largest_seed_is_accepted() -> None:
    parser = add_common_arguments(argparse.ArgumentParser(prog="demo"), slug="demo")
    assert parser.parse_args(["--seed", str(2**32 - 1)]).seed == 2**32 - 1


@pytest.mark.parametrize(("text", "expected"), [("1", 1), ("17", 17)])
def test_positive_int_accepts_counts(text: str, expected: int) -> None:
    assert positive_int(text) == expected


@pytest.mark.parametrize("bad", ["0", "-3", "2.5", "x", ""])
def test_positive_int_rejects_with_a_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="demo")
    parser.add_argument("--n", type=positive_int)
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--n", bad])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--n" in err and ">= 1" in err and "Traceback" not in err


@pytest.mark.parametrize(("text", "ok"), [("0", True), (str(2**32 - 1), True), ("-1", False), (str(2**32), False)])
def test_seed_int_range(text: str, ok: bool) -> None:
    if ok:
        assert seed_int(text) == int(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=r"\[0, 2\*\*32 - 1\]"):
            seed_int(text)
