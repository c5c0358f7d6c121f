"""The user's own data (CONTRACT 4b): the Hallem-Carlson table layout, `run --data`, and bad input everywhere."""

import math
import re

import jax
import numpy as np
import pytest
from nips25_olfaction import (
    CircuitParams,
    OUNoise,
    WhiteNoise,
    calibrate,
    calibrate_matched,
    kwta_hash,
    load_hallem,
    olsen_pn,
    read_hallem_csv,
    simulate,
    sweep,
    synthetic_odors,
)
from nips25_olfaction.circuit import Circuit
from nips25_olfaction.cli import main
from scipy import sparse

# The released layout (drosolf's Hallem_Carlson_2006.csv): glomerulus line (blank where unmapped, "cas_number" over
# the last column), receptor line (blank last cell), odours (changes from spontaneous, Hz), spontaneous line.
# Made-up numbers: no Hallem-Carlson value is copied here.
RELEASED = (
    "odor,DA4m,,VM3,cas_number\n"
    "odor,2a,33b,9a,\n"
    "ethyl acetate,10,-20,5,141-78-6\n"
    "\n"
    "pentyl acetate,-9,4,100,628-63-7\n"
    "spontaneous firing rate,8,17,3,\n"
)


def _write(tmp_path, text, name="hc.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_released_layout_known_answer(tmp_path):
    """Spontaneous rate added, negatives clipped at 0, CAS column dropped, blank glomerulus names tolerated."""
    orn, odours, receptors = read_hallem_csv(_write(tmp_path, RELEASED))
    np.testing.assert_array_equal(orn, [[18.0, 0.0, 8.0], [0.0, 21.0, 103.0]])
    assert odours == ["ethyl acetate", "pentyl acetate"]
    assert receptors == ["2a", "33b", "9a"]
    assert orn.dtype == np.float64


def test_bom_crlf_quotes_and_upper_case_extension(tmp_path):
    """A spreadsheet export: UTF-8 BOM, CRLF line ends, a quoted name with a comma, ``.CSV``."""
    text = '\ufeffodor,2a,7a\r\n"2,3-butanedione",1,2\r\nB,3,4\r\nspontaneous firing rate,1,1\r\n'
    path = tmp_path / "T.CSV"
    path.write_bytes(text.encode("utf-8"))
    orn, odours, receptors = read_hallem_csv(path)
    np.testing.assert_array_equal(orn, [[2.0, 3.0], [4.0, 5.0]])
    assert (odours, receptors) == (["2,3-butanedione", "B"], ["2a", "7a"])


def test_absolute_rates_and_tsv(tmp_path):
    text = "odor\tOr2a\tOr7a\nA\t1.5\t0\nB\t3\t40\nspontaneous firing rate\t8\t17\n"
    orn, odours, receptors = read_hallem_csv(_write(tmp_path, text, "t.tsv"), add_spontaneous=False)
    np.testing.assert_array_equal(orn, [[1.5, 0.0], [3.0, 40.0]])  # spontaneous line dropped, not added
    assert (odours, receptors) == (["A", "B"], ["Or2a", "Or7a"])


def test_reads_the_released_file_exactly_as_drosolf():
    """The file as released in drosolf gives what drosolf.orns.orns() gives (all 110 x 24 values, names)."""
    pytest.importorskip("drosolf")
    import importlib.resources

    path = importlib.resources.files("drosolf") / "Hallem_Carlson_2006.csv"
    orn, odours, receptors = read_hallem_csv(str(path))
    ref, ref_names = load_hallem()
    np.testing.assert_array_equal(orn, ref)
    assert odours == ref_names and len(receptors) == 24 and receptors[:2] == ["2a", "7a"]


HEADER = "odor,2a,7a,9a\n"
SPONT = "spontaneous firing rate,8,17,3\n"


@pytest.mark.parametrize(
    ("name", "text", "kwargs", "match"),
    [
        ("t.csv", "", {}, "empty"),
        ("t.csv", "\n\n", {}, "empty"),
        ("t.csv", "2a,7a\n1,2\n", {}, "line 1 must be a header starting with 'odor'"),
        ("t.csv", HEADER + "A,1,2\n" + SPONT, {}, "line 2 has 3 cells, the header has 4"),
        ("t.csv", HEADER + "A,1,x,3\n" + SPONT, {}, r"line 2 \('A'\), column '7a': expected a finite number"),
        ("t.csv", HEADER + "A,1,nan,3\n" + SPONT, {}, r"line 2 \('A'\), column '7a'.*'nan'"),
        ("t.csv", HEADER + "B,1,2,3\nA,1,2,-inf\n" + SPONT, {}, r"line 3 \('A'\), column '9a'.*'-inf'"),
        ("t.csv", HEADER + "A,1,2,3\n" + "spontaneous firing rate,8,,3\n", {}, "column '7a'.*got ''"),
        ("t.csv", HEADER + "A,1,2,3\n", {}, "no 'spontaneous firing rate' line"),
        ("t.csv", HEADER + SPONT, {}, "no odour lines"),
        ("t.csv", "odor,2a,,9a\nA,1,2,3\n" + SPONT, {}, "column 3 has no receptor name"),
        ("t.csv", "odor,cas_number\nA,1\n", {}, "no receptor columns"),
        ("t.csv", "odor,x\nodor,2a,7a\nA,1,2\n", {}, "header line 1 has 2 cells"),
        ("t.csv", HEADER + ",1,2,3\n" + SPONT, {}, "line 2 has no odour name"),
        ("t.csv", HEADER + "A,1,2,3\nA,3,4,5\n" + SPONT, {}, "line 3 repeats odour 'A' of line 2"),
        ("t.csv", HEADER + "A,-1,2,3\n", {"add_spontaneous": False}, r"line 2 \('A'\), column '2a': absolute rates"),
        ("t.xlsx", HEADER + "A,1,2,3\n" + SPONT, {}, r"expected a .csv or .tsv table, got extension '.xlsx'"),
        ("t", HEADER, {}, "got extension ''"),
    ],
)
def test_bad_tables_name_file_line_and_column(tmp_path, name, text, kwargs, match):
    path = _write(tmp_path, text, name)
    with pytest.raises(ValueError, match=match) as err:
        read_hallem_csv(path, **kwargs)
    assert str(path) in str(err.value)


def test_missing_and_undecodable_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        read_hallem_csv(tmp_path / "nope.csv")
    path = tmp_path / "latin1.csv"
    path.write_bytes(HEADER.encode() + b"\xe9thyl,1,2,3\n")
    with pytest.raises(ValueError, match="not a readable UTF-8 table"):
        read_hallem_csv(path)


def test_cli_run_on_own_file(tmp_path, capsys):
    """`run --data` on a user's table in the released layout prints the condition x noise table for it."""
    rng = np.random.default_rng(0)
    receptors = [f"r{i}" for i in range(12)]
    rows = [f"odor,{','.join(receptors)}"]
    rows += [f"odour {k}," + ",".join(f"{v:.1f}" for v in rng.gamma(1.0, 40.0, 12) - 10) for k in range(8)]
    rows.append("spontaneous firing rate," + ",".join(["10"] * 12))
    path = _write(tmp_path, "\n".join(rows) + "\n")
    argv = ["run", "--data", str(path), "--odors", "4", "--n-kc", "60", "--seeds", "1", "--noise", "10", "-q"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"{path} (8 odours x 12 receptors): 4 most similar odours; calibration on 4 others" in out
    rows_out = [line.split() for line in out.splitlines()[2:]]
    assert [r[0] for r in rows_out] == ["none", "LI", "SFA", "LI+SFA"]
    for r in rows_out:  # accuracy ± SE over one seed, a number in [0, 1]
        assert 0.0 <= float(r[1].split("±")[0]) <= 1.0


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--data", "{dir}/missing.csv"], "--data: .*missing.csv: no such file"),
        (["--data", "{dir}/bad.csv"], r"--data: .*bad.csv: line 2 \('A'\), column '7a'"),
        (["--data", "{dir}/one.csv"], "needs at least 2 odours"),
        (["--data", "{dir}/bad.json"], "expected a .csv or .tsv"),
        (["--absolute"], "--absolute applies to --data only"),
        (["--noise", "nan"], "--noise levels must be finite"),
        (["--noise", "10,inf"], "--noise levels must be finite"),
        (["--noise", "-1"], "--noise levels must be finite and >= 0"),
        (["--noise", "1,x"], "--noise must be comma-separated numbers"),
        (["--n-kc", "0"], "argument --n-kc: must be an integer >= 1, got 0"),
        (["--seeds", "-2"], "argument --seeds: must be an integer >= 1"),
        (["--claws", "0"], "argument --claws: must be an integer >= 1"),
        (["--odors", "1"], "argument --odors: must be an integer >= 2"),
        (["--n-kc", "2.5"], "argument --n-kc: must be an integer >= 1, got '2.5'"),
    ],
)
def test_cli_bad_input_names_the_argument(tmp_path, capsys, argv, match):
    (tmp_path / "bad.csv").write_text(HEADER + "A,1,x,3\n" + SPONT)
    (tmp_path / "one.csv").write_text(HEADER + "A,1,2,3\n" + SPONT)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(SystemExit) as err:
        main(["run", *[a.format(dir=tmp_path) for a in argv]])
    assert err.value.code == 2
    assert "Traceback" not in (msg := capsys.readouterr().err)
    assert "nips25-olfaction run: error:" in msg
    assert re.search(match, msg), msg


def test_cli_claws_above_receptors(tmp_path, capsys):
    (tmp_path / "two.csv").write_text(HEADER + "A,1,2,3\nB,4,5,6\n" + SPONT)
    with pytest.raises(SystemExit):
        main(["run", "--data", str(tmp_path / "two.csv")])
    assert "--claws 6 exceeds the 3 receptors" in capsys.readouterr().err


def test_cli_calibration_failure_is_an_argument_error(tmp_path, capsys):
    """claws = receptors makes every KC identical: the calibration cannot reach 20% active, said without traceback."""
    (tmp_path / "two.csv").write_text(HEADER + "A,1,2,3\nB,4,5,6\n" + SPONT)
    with pytest.raises(SystemExit):
        main(["run", "--data", str(tmp_path / "two.csv"), "--claws", "3", "--n-kc", "20", "--noise", "10"])
    assert "calibration on the odours of" in capsys.readouterr().err


CIRCUIT = Circuit(np.eye(2, dtype=np.float32), params=CircuitParams(window=0.01))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: CircuitParams(tau_m="10 ms"), TypeError, "tau_m must be a real number"),
        (lambda: CircuitParams(w_pn=[0.1]), TypeError, "w_pn must be a real scalar"),
        (lambda: CircuitParams(window=0.00075), ValueError, "window must be a whole number of steps"),
        (lambda: CircuitParams(t_ref=0.3e-3), ValueError, "t_ref must be a whole number of steps"),
        (lambda: WhiteNoise("1"), TypeError, "sigma must be a real scalar"),
        (lambda: OUNoise(np.ones(2)), TypeError, "sigma must be a real scalar"),
        (lambda: OUNoise(1.0, tau="20 ms"), TypeError, "tau must be a real number"),
        (lambda: synthetic_odors(np.random.default_rng(0), 3, spontaneous=math.nan), ValueError, "spontaneous"),
        (lambda: synthetic_odors(np.random.default_rng(0), 3, scale=math.inf), ValueError, "scale"),
        (lambda: synthetic_odors(np.random.default_rng(0), 3, n_glomeruli=2.5), ValueError, "n_glomeruli"),
        (lambda: olsen_pn([["a", "b"]]), TypeError, "orn must be a real 2-D array"),
        (
            lambda: simulate(CIRCUIT, [["a", "b"]], noise=WhiteNoise(0.0), n_trials=1, key=jax.random.key(0)),
            TypeError,
            "pn_rates must be a real array",
        ),
        (lambda: calibrate(np.ones((2, 2)), CIRCUIT, tolerance=math.nan), ValueError, "tolerance must be in"),
        (lambda: calibrate_matched(np.ones((2, 2)), CIRCUIT, tolerance=-0.1), ValueError, "tolerance must be in"),
        (
            lambda: sweep(np.ones((2, 2)), CircuitParams(), noise_levels=(1.0,), seeds=(0,), n_train=1.5),
            TypeError,
            "n_train must be an int",
        ),
    ],
)
def test_bad_arguments_name_themselves(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_gains_accept_numpy_and_jax_scalars():
    assert CircuitParams(w_pn=np.float32(0.01), w_li=np.array(0.1), g_sfa=jax.numpy.asarray(0.2)).w_pn > 0


def test_sparse_odour_matrices_equal_dense():
    """Fly-LSH #7: scipy-sparse odour matrices are accepted and give the dense answer."""
    x = np.array([[0.0, 3.0, 0.0, 1.0], [2.0, 0.0, 0.0, 5.0]])
    c = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1]], dtype=float)
    np.testing.assert_array_equal(kwta_hash(sparse.csr_matrix(x), c, k=1), kwta_hash(x, c, k=1))
    np.testing.assert_array_equal(olsen_pn(sparse.csr_matrix(x)), olsen_pn(x))
