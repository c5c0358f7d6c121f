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
