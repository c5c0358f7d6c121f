"""`nips25-conformal run --data FILE`: a user's one-row-per-view CSV, and every bad input named (CONTRACT 4b)."""

import csv
import json

import numpy as np
import pytest
from nips25_conformal.cli import main
from nips25_conformal.user_data import read_views_csv, run_on_table
from sklearn.datasets import load_digits


def _write(path, rows, header=("plant", "species", "split", "f0", "f1", "f2", "f3")):
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


@pytest.fixture(scope="module")
def digits_rows():
    """Digits (4 PCA-free pixel blocks as features), 3 classes; an object = 3 images of one class."""
    X, y = load_digits(return_X_y=True)
    keep = y < 3
    X, y = X[keep][:, [10, 20, 30, 42]], y[keep]
    names = np.array(["ash", "beech", "cedar"])
    rows, rng = [], np.random.default_rng(0)
    order = rng.permutation(y.size)
    n_obj = order.size // 3
    for o in range(n_obj):
        idx = order[3 * o : 3 * o + 3]
        cls = y[idx[0]]
        idx = np.flatnonzero(y == cls)[rng.choice((y == cls).sum(), 3, replace=False)]
        split = "train" if o < n_obj // 3 else "cal" if o < 2 * n_obj // 3 else "test"
        rows += [[f"p{o}", names[cls], split, *X[i]] for i in idx]
    return rows


def test_run_writes_one_set_per_test_object_with_per_class_coverage(tmp_path, digits_rows, capsys):
    data = _write(tmp_path / "views.csv", digits_rows)
    args = ["run", "--data", str(data), "--label", "species", "--object", "plant", "--split", "split"]
    assert main([*args, "--out", str(tmp_path / "out"), "--alpha", "0.1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["classes"] == ["ash", "beech", "cedar"]
    n_test = sum(r[2] == "test" for r in digits_rows) // 3
    assert summary["test_objects"] == n_test == summary["labelled_test_objects"]
    assert 0 < summary["mean_set_size"] < 3
    with (tmp_path / "out" / "sets.csv").open() as fh:
        out = list(csv.DictReader(fh))
    for cls, cov in summary["per_class_coverage"].items():  # >= 1 - alpha up to 3 binomial SEs on n_c objects
        n_c = sum(row["label"] == cls for row in out)
        assert cov >= 0.9 - 3 * (0.9 * 0.1 / n_c) ** 0.5, (cls, cov, n_c)
        covered = [cls in row["set"].split() for row in out if row["label"] == cls]
        assert cov == pytest.approx(np.mean(covered))
    assert len(out) == n_test and out[0]["n_views"] == "3" and set(out[0]) >= {"set", "p_ash", "p_cedar"}
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == summary


def test_without_a_split_column_objects_are_split_by_object_and_unlabelled_ones_predicted(tmp_path, digits_rows):
    rows = [[r[0], "" if i >= len(digits_rows) - 6 else r[1], *r[3:]] for i, r in enumerate(digits_rows)]
    data = _write(tmp_path / "v.csv", rows, header=("plant", "species", "f0", "f1", "f2", "f3"))
    table = read_views_csv(data, label="species", object_id="plant")
    result = run_on_table(table, seed=3)
    assert {"p" + str(len(digits_rows) // 3 - 1), "p" + str(len(digits_rows) // 3 - 2)} <= set(result.objects)
    assert result.summary["test_objects"] == result.summary["labelled_test_objects"] + 2
    again = run_on_table(table, seed=3)
    np.testing.assert_array_equal(again.p_values, result.p_values)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda rows: rows, "--label: .* has no column 'kind'"),
        (
            lambda rows: [[*rows[0][:3], "abc", *rows[0][4:]], *rows[1:]],
            r"line 2, column 'f0' is 'abc'; expected a number",
        ),
        (lambda rows: [rows[0], [*rows[1][:4], "nan", *rows[1][5:]], *rows[2:]], r"line 3, column 'f1' is 'nan'"),
        (lambda rows: [rows[0], ["", *rows[1][1:]], *rows[2:]], r"--object: .* line 3, column 'plant' is empty"),
        (lambda rows: [[*rows[0][:2], "val", *rows[0][3:]], *rows[1:]], r"--split: .* line 2, column 'split' is 'val'"),
        (
            lambda rows: [rows[0], [rows[1][0], "oak", *rows[1][2:]], *rows[2:]],
            r"object 'p0' has label 'ash' on line 2",
        ),
        (lambda rows: [rows[0], rows[1][:3]], r"line 3 has 3 cells, the header has 7"),
    ],
)
def test_bad_input_names_file_column_and_line(tmp_path, digits_rows, capsys, edit, match):
    rows = [list(map(str, r)) for r in digits_rows[:30]]
    rows[0][1] = rows[1][1] = rows[2][1] = "ash"
    data = _write(tmp_path / "bad.csv", edit(rows))
    label = "kind" if "kind" in match else "species"
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "run",
                "--data",
                str(data),
                "--label",
                label,
                "--object",
                "plant",
                "--split",
                "split",
                "--out",
                str(tmp_path),
            ]
        )
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert __import__("re").search(match, err), err


def test_missing_and_empty_files_are_named(tmp_path, capsys):
    for path, match in [(tmp_path / "none.csv", "no such file"), (tmp_path / "empty.csv", "holds no data rows")]:
        if "empty" in path.name:
            path.write_text("plant,species,f0\n")
        with pytest.raises(SystemExit):
            main(["run", "--data", str(path), "--label", "species", "--object", "plant", "--out", str(tmp_path)])
        assert match in capsys.readouterr().err
