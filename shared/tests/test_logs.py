import logging

import pytest

from nips25_shared import configure_logging, get_logger, is_quiet, progress


def test_levels_from_verbosity():
    assert configure_logging(1) == logging.DEBUG
    assert configure_logging(-1) == logging.WARNING and is_quiet()
    assert configure_logging(-3) == logging.ERROR
    assert configure_logging(0) == logging.INFO and not is_quiet()


def test_env_level(monkeypatch):
    monkeypatch.setenv("NIPS25_LOG_LEVEL", "warning")
    assert configure_logging(0) == logging.WARNING
    monkeypatch.setenv("NIPS25_LOG_LEVEL", "loud")
    with pytest.raises(ValueError, match="NIPS25_LOG_LEVEL"):
        configure_logging(0)
    monkeypatch.delenv("NIPS25_LOG_LEVEL")
    configure_logging(0)


def test_logger_names_share_one_root():
    assert get_logger("routing").name == "nips25.routing"
    assert get_logger("nips25_routing.reproduce").name == "nips25.nips25_routing.reproduce"
    assert get_logger("nips25.x").name == "nips25.x"
    with pytest.raises(ValueError, match="name"):
        get_logger("")


def test_progress_yields_everything_and_is_quiet(capsys):
    configure_logging(-1)
    assert list(progress(range(5), desc="x")) == [0, 1, 2, 3, 4]
    assert capsys.readouterr().err == ""
    configure_logging(0)


@pytest.mark.parametrize(
    ("env", "silent"),
    [({}, False), ({"TQDM_DISABLE": "1"}, True), ({"RANK": "1"}, True), ({"LOCAL_RANK": "1"}, True),
     ({"RANK": "0", "LOCAL_RANK": "0"}, False)],
)  # fmt: skip
def test_progress_is_silent_under_tqdm_disable_and_on_other_ranks(monkeypatch, capsys, env, silent):
    from nips25_shared import configure_logging, progress
    from nips25_shared.logs import is_main_rank

    for name in ("TQDM_DISABLE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    configure_logging(0)
    assert list(progress(range(3), desc="bar")) == [0, 1, 2]
    assert (capsys.readouterr().err == "") is silent
    assert is_main_rank() is (env.get("RANK", env.get("LOCAL_RANK", "0")) == "0")


def test_run_reproduce_writes_only_on_the_main_rank(tmp_path, monkeypatch):
    import argparse

    from nips25_shared import Claim, Report, run_reproduce

    def reproduce(*, profile, seed, out_dir):
        claim = Claim(id="c", statement="s", paper=None, measured=1, criterion="x", holds=True, scale_note="n")
        return Report(package="p", title="t", profile=profile, seed=seed, config={}, claims=[claim], wall_time_s=0.0)

    args = argparse.Namespace(verbose=0, quiet=1, seed=0, profile="quick", out=tmp_path / "r1")
    monkeypatch.setenv("RANK", "1")
    run_reproduce(reproduce, args)
    assert not (tmp_path / "r1" / "results.json").exists()
    monkeypatch.setenv("RANK", "0")
    run_reproduce(reproduce, args)
    assert (tmp_path / "r1" / "results.json").exists()
