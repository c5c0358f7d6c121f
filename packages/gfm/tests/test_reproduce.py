"""reproduce in its tiny profile, the CLI and the README quickstart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from nips25_gfm import LinearGNNEnsemble, PerGraphGNN, linear_gnn_channels, load_dataset, majority_accuracy
from nips25_gfm.cli import main
from nips25_gfm.reproduce import reproduce

README = Path(__file__).resolve().parents[1] / "README.md"


def test_reproduce_rejects_an_unknown_profile(tmp_path) -> None:
    # the tiny profile's report is checked in test_paper_config.py (one run serves both tests)
    with pytest.raises(ValueError, match="profile"):
        reproduce(profile="huge", out_dir=tmp_path)


def test_baselines_and_errors(task) -> None:
    ens = LinearGNNEnsemble(fusion="mean")
    with pytest.raises(Exception, match="fit"):
        ens.predict_proba()
    assert 0.0 <= ens.score(task) <= 1.0
    assert ens.predict_proba().shape == (task.num_nodes, task.num_classes)
    assert len(linear_gnn_channels(task.adjacency, task.x)) == 5
    assert 0.0 < majority_accuracy(task) <= 1.0
    _, info = PerGraphGNN.train_on(task, epochs=5, target_accuracy=0.0)
    assert info["reached"] and info["epochs"] == 1
    with pytest.raises(ValueError, match="fusion"):
        LinearGNNEnsemble(fusion="max")
    with pytest.raises(ValueError, match="temperature"):
        LinearGNNEnsemble(temperature=0.0)
    with pytest.raises(TypeError, match="task"):
        ens.fit("iris")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="backbone"):
        PerGraphGNN(3, 2, backbone="gin")
    with pytest.raises(ValueError, match="name"):
        load_dataset("cora")


def test_cli_errors_exit_2(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["predict", "--model", str(tmp_path / "none.pt"), "--task", "iris"])
    assert exc.value.code == 2 and "no saved model" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["train", "--tasks", "iris", "--save", str(tmp_path / "m.pt"), "--lp-ratio", "1.5"])
    assert exc.value.code == 2 and "lp_ratio" in capsys.readouterr().err


def test_cli_train_and_predict(tmp_path, capsys) -> None:
    model = tmp_path / "m.pt"
    assert main(["train", "--tasks", "iris", "--save", str(model), "--epochs", "2", "--hidden", "4", "-q"]) == 0
    assert main(["predict", "--model", str(model), "--task", "karate", "-q"]) == 0
    assert '"test_accuracy"' in capsys.readouterr().out


def test_readme_quickstart_runs() -> None:
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    exec(compile(block.group(1), str(README), "exec"), {})
