"""The user's own labelled graph (CONTRACT 4b): the reader, `nips25-gnnclt run`, and bad files and arguments."""

import json
import re
import shutil
from importlib import resources

import jax
import nips25_gnnclt.graph_files as gf
import numpy as np
import pytest
from nips25_gnnclt import class_mean_check, load_drosophila_left, read_labelled_graph, symmetrize_binarize
from nips25_gnnclt.cli import main

EDGES = "source,target,synapses\nn3,n1,2\nn1,n2,5\nn2,n3,1\nn3,n4,4\nn4,n1,0\nn1,n3,1\n"
LABELS = "node,cell_type\nn1,KC\nn2,KC\nn3,PN\nn4,PN\n"
W = {"weight": "synapses"}


@pytest.fixture
def graph(tmp_path):
    """A 4-node weighted directed graph with string node ids, in the embedded Drosophila layout."""
    (tmp_path / "edges.csv").write_text(EDGES)
    (tmp_path / "labels.csv").write_text(LABELS)
    return tmp_path / "edges.csv", tmp_path / "labels.csv"


def test_reader_known_answer(graph):
    """Node order is the labels' row order; repeated (i, j) rows add; weights as written; classes sorted."""
    A, y, classes = read_labelled_graph(*graph, weight="synapses")
    expected = np.zeros((4, 4))
    expected[2, 0], expected[0, 1], expected[1, 2], expected[2, 3], expected[0, 2] = 2, 5, 1, 4, 1
    np.testing.assert_array_equal(A, expected)  # the weight-0 row n4 -> n1 is no edge
    np.testing.assert_array_equal(y, [0, 0, 1, 1])
    assert classes.tolist() == ["KC", "PN"]
    unweighted, _, _ = read_labelled_graph(*graph)  # no weight column: every row counts 1
    assert unweighted[3, 0] == 1.0 and unweighted[0, 1] == 1.0


def test_reader_reads_the_embedded_files_as_released(tmp_path):
    """A copy of the embedded Drosophila files reads back to the loader's matrix and cell types."""
    root = resources.files("nips25_gnnclt") / "data"
    for name in ("drosophila_left_edges.csv", "drosophila_left_labels.csv"):
        with resources.as_file(root / name) as src:
            shutil.copy(src, tmp_path / name)
    A, y, classes = read_labelled_graph(
        tmp_path / "drosophila_left_edges.csv", tmp_path / "drosophila_left_labels.csv", weight="synapses"
    )
    ref, types = load_drosophila_left()
    np.testing.assert_array_equal(A, ref)
    np.testing.assert_array_equal(classes[y], types)
    assert int(ref.sum()) > 0 and ref.dtype == np.int64


def test_reader_tsv(tmp_path):
    (tmp_path / "e.tsv").write_text("source\ttarget\na\tb\n")
    (tmp_path / "l.tsv").write_text("node\tcell_type\na\tX\nb\tY\n")
    A, y, _ = read_labelled_graph(tmp_path / "e.tsv", tmp_path / "l.tsv")
    np.testing.assert_array_equal(A, [[0, 1], [0, 0]])
    np.testing.assert_array_equal(y, [0, 1])


@pytest.mark.parametrize(
    ("edges", "labels", "kwargs", "error", "match"),
    [
        ("src,target\nn1,n2\n", LABELS, {}, ValueError, r"edges file .*edges\.csv: missing column\(s\) 'source'"),
        (EDGES.replace("n2,n3,1", "n2,n3,abc"), LABELS, W, ValueError, r"row 4, field 'synapses'.*'abc'"),
        (EDGES.replace("n2,n3,1", "n2,n3,nan"), LABELS, W, ValueError, r"row 4, field 'synapses'"),
        (EDGES.replace("n2,n3,1", "n2,n3,inf"), LABELS, W, ValueError, r"row 4, field 'synapses'"),
        (EDGES.replace("n2,n3,1", "n2,n3,-1"), LABELS, W, ValueError, r"row 4, field 'synapses'"),
        (EDGES.replace("n2,n3,1", "n2,n3"), LABELS, {}, ValueError, r"edges file .*, row 4: 2 fields, the header"),
        (EDGES.replace("n2,n3,1", "n2,n9,1"), LABELS, {}, ValueError, r"row 4, field 'target': node 'n9' is not in"),
        ("", LABELS, {}, ValueError, r"edges file .* is empty"),
        ("source,target\n", LABELS, {}, ValueError, r"edges file .* has a header but no edge rows"),
        (EDGES, "", {}, ValueError, r"labels file .* is empty"),
        (EDGES, "node,cell_type\n", {}, ValueError, r"labels file .* has a header but no node rows"),
        (EDGES, LABELS + "n1,PN\n", {}, ValueError, r"labels file .*, row 6, field 'node': node 'n1' is listed twice"),
        (EDGES, LABELS.replace("n2,KC", "n2,"), {}, ValueError, r"row 3, field 'cell_type': empty cell"),
        (EDGES, LABELS, {"label": "type"}, ValueError, r"labels file .*: missing column\(s\) 'type'"),
        (EDGES, LABELS, {"weight": "w"}, ValueError, r"edges file .*: missing column\(s\) 'w'"),
        (b"\xff\xfe\x00bad", LABELS, {}, ValueError, r"edges file .*row 1: not a readable UTF-8"),
    ],
)
def test_reader_bad_files_name_file_row_and_field(tmp_path, edges, labels, kwargs, error, match):
    e, lab = tmp_path / "edges.csv", tmp_path / "labels.csv"
    e.write_bytes(edges if isinstance(edges, bytes) else edges.encode())
    lab.write_text(labels)
    with pytest.raises(error, match=match):
        read_labelled_graph(e, lab, **kwargs)


@pytest.mark.parametrize(
    ("edges", "labels", "error", "match"),
    [
        ("missing.csv", "labels.csv", FileNotFoundError, r"edges file .*missing\.csv does not exist"),
        ("edges.csv", "missing.csv", FileNotFoundError, r"labels file .*missing\.csv does not exist"),
        ("edges.parquet", "labels.csv", ValueError, r"expected a \.csv or \.tsv file, got extension '\.parquet'"),
        ("edges.csv", ".", ValueError, r"labels file .*expected a \.csv or \.tsv file"),
    ],
)
def test_reader_bad_paths(graph, edges, labels, error, match):
    root = graph[0].parent
    shutil.copy(graph[0], root / "edges.parquet")
    with pytest.raises(error, match=match):
        read_labelled_graph(root / edges, root / labels)


@pytest.mark.parametrize(
    ("A", "y", "error", "match"),
    [
        (np.full((4, 4), np.nan), [0, 0, 1, 1], ValueError, "A must be finite"),  # was: silently "no edges"
        (np.array([[0, 1, 0, 0], [-1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0]]), [0, 0, 1, 1], ValueError, r"A\[1, 0\]"),
        (np.ones((4, 4)), ["a", "a", "b", "b"], TypeError, "y must hold integer"),  # was: a numpy ufunc error
        (np.ones((4, 4)), [0.0, 0.0, 1.0, 1.0], TypeError, "y must hold integer class labels"),  # was: IndexError
        (np.ones((4, 4)), [0, 0, 1], ValueError, "y must have length 4"),  # was: blamed X
    ],
)
def test_class_mean_check_rejects_bad_graphs_and_labels(A, y, error, match):
    with pytest.raises(error, match=match):
        class_mean_check(A, np.asarray(y), jax.random.key(0), ks=(1,))


def test_symmetrize_binarize_known_answer():
    """Either direction makes an edge; weights become 1; the diagonal is dropped; a negative weight is refused
    (it would cancel the reverse edge)."""
    a = np.array([[3.0, 2.0, 0.0], [0.0, 0.0, 0.0], [7.0, 0.0, 0.0]])
    np.testing.assert_array_equal(symmetrize_binarize(a), [[0, 1, 1], [1, 0, 0], [1, 0, 0]])
    with pytest.raises(ValueError, match="non-negative"):
        symmetrize_binarize(np.array([[0.0, 1.0], [-1.0, 0.0]]))


def test_cli_run_on_a_user_file_matches_the_api(graph, tmp_path, capsys):
    """`run` prints the same numbers as class_mean_check on the file read by read_labelled_graph, seeded."""
    out = tmp_path / "res" / "run.json"
    argv = ["run", "--edges", str(graph[0]), "--labels", str(graph[1]), "--weight-column", "synapses"]
    assert main([*argv, "--k", "1,2", "--seed", "3", "--out", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    assert "n = 4, K = 2" in printed and "KC (2), PN (2)" in printed
    A, y, _ = read_labelled_graph(*graph, weight="synapses")
    ref = class_mean_check(A, y, jax.random.key(3), ks=(1, 2))
    saved = json.loads(out.read_text())
    assert saved["nu_hat"] == pytest.approx(ref["nu_hat"]) == pytest.approx(2.0)  # 4 undirected edges / 4 nodes x 2
    for k in (1, 2):
        assert saved["per_k"][str(k)]["rel_error"] == pytest.approx(ref["per_k"][k]["rel_error"])
        assert f"{ref['per_k'][k]['rel_error']:10.4f}" in printed  # --seed 3 is jax.random.key(3): reproducible


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--k", "0"], "--k"),
        (["--noise", "-1"], "--noise"),
        (["--noise", "nan"], "--noise"),
        (["--noise", "0.1,0.2"], "--noise"),
        (["--weight-column", "w"], "missing column"),
        (["--label-column", "type"], "missing column"),
    ],
)
def test_cli_run_rejects_bad_arguments(graph, capsys, extra, match):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--edges", str(graph[0]), "--labels", str(graph[1]), *extra])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("edges", "labels", "match"),
    [
        ("source,target\nn1,n2\n", "node,cell_type\nn1,KC\nn2,PN\n", r"every class needs >= 2 nodes.*'KC' \(1\)"),
        ("source,target\nn1,n1\n", "node,cell_type\nn1,KC\nn2,KC\n", r"the graph of .*: A has no edges"),
        ("source,target\nn1,n3\n", "node,cell_type\nn1,KC\nn2,KC\n", r"row 2, field 'target': node 'n3'"),
    ],
)
def test_cli_run_bad_graphs_are_usage_errors(tmp_path, capsys, edges, labels, match):
    (tmp_path / "e.csv").write_text(edges)
    (tmp_path / "l.csv").write_text(labels)
    with pytest.raises(SystemExit) as exc:
        main(["run", "--edges", str(tmp_path / "e.csv"), "--labels", str(tmp_path / "l.csv")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "nips25-gnnclt run: error:" in err
    assert re.search(match, err)


def test_reader_refuses_more_nodes_than_the_dense_matrix_allows(graph, monkeypatch):
    """The adjacency is dense: beyond MAX_NODES the reader stops before allocating, naming the labels file."""
    monkeypatch.setattr(gf, "MAX_NODES", 3)
    with pytest.raises(ValueError, match=r"labels file .* lists 4 nodes; at most 3"):
        read_labelled_graph(*graph)
