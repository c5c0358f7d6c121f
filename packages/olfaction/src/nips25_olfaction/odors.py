"""Odour inputs: receptor (ORN) responses, the ORN-to-PN transform, and odour sets (Hallem-Carlson or synthetic)."""

from __future__ import annotations

import csv
import importlib.util
import math
import numbers
import os
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

__all__ = ["hard_subset", "load_hallem", "olsen_pn", "read_hallem_csv", "synthetic_odors"]

R_MAX = 165.0
SIGMA = 12.0
M_INPUT_GAIN = 10.63
LFP_SCALE = 190.0
SPONTANEOUS_ROW = "spontaneous firing rate"
HEADER_CELLS = ("odor", "odour")
DROPPED_COLUMNS = ("cas_number", "cas")
DELIMITERS = {".csv": ",", ".tsv": "\t"}


def dense(x: ArrayLike) -> ArrayLike:
    """``x`` itself, or a scipy sparse matrix as a dense array (odour matrices may come either way)."""
    return x.toarray() if sparse.issparse(x) else x  # type: ignore[union-attr]


def _check_matrix(x: ArrayLike, name: str) -> NDArray[np.float64]:
    try:
        arr = np.asarray(dense(x), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real 2-D array (odours, glomeruli): {exc}") from exc
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (odours, glomeruli), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def olsen_pn(orn: ArrayLike) -> NDArray[np.float64]:
    r"""Projection-neuron rates from receptor rates by input gain control (Olsen, Luo & Wilson 2010).

    .. math::
        \mathrm{PN}_i = R_{max} \frac{\mathrm{ORN}_i^{1.5}}{\mathrm{ORN}_i^{1.5} + \sigma^{1.5} + s^{1.5}},
        \qquad s = m \sum_j \mathrm{ORN}_j / 190,

    with :math:`R_{max} = 165` Hz, :math:`\sigma = 12`, :math:`m = 10.63`. Negative receptor rates are clipped to 0.

    Args:
        orn: receptor rates (Hz), shape ``(K, n_glomeruli)``, dense or a scipy sparse matrix.

    Returns:
        PN rates (Hz), shape ``(K, n_glomeruli)``, in ``[0, R_max)``.

    Raises:
        ValueError: if ``orn`` is not a finite, non-empty 2-D array.
        TypeError: if ``orn`` is not numeric.

    References:
        Olsen, Bhandawat & Wilson, Neuron 2010 (eq. 6); used by Li et al., NeurIPS 2025, as the PN stage.

    Example:
        >>> round(float(olsen_pn([[12.0, 0.0]])[0, 0]), 3)
        81.958
    """
    orn = np.clip(_check_matrix(orn, "orn"), 0.0, None)
    s = M_INPUT_GAIN * orn.sum(axis=1, keepdims=True) / LFP_SCALE
    p = orn**1.5
    return R_MAX * p / (p + SIGMA**1.5 + s**1.5)


def load_hallem() -> tuple[NDArray[np.float64], list[str]]:
    """Hallem & Carlson (2006) receptor responses of 110 odours x 24 receptors, with spontaneous rates added.

    Needs the optional extra ``hallem`` (``pip install 'nips25-olfaction[hallem]'``, which installs the GPLv3
    package ``drosolf``); the data are read from it at run time and never copied into this package.

    Returns:
        ``(orn, odour_names)``: rates in Hz, shape ``(110, 24)``, clipped at 0; and the 110 odour names.

    Raises:
        ModuleNotFoundError: if ``drosolf`` is not installed, naming the extra to install.
    """
    if importlib.util.find_spec("drosolf") is None:
        raise ModuleNotFoundError(
            "the Hallem-Carlson data need the optional extra: pip install 'nips25-olfaction[hallem]' (drosolf, GPLv3)"
        )
    from drosolf import orns

    with warnings.catch_warnings():  # drosolf uses a pandas keyword that pandas 3 deprecates
        warnings.simplefilter("ignore")
        frame = orns.orns()
    return np.clip(frame.to_numpy(dtype=np.float64), 0.0, None), [str(i) for i in frame.index]


def read_hallem_csv(
    path: str | os.PathLike[str], *, add_spontaneous: bool = True
) -> tuple[NDArray[np.float64], list[str], list[str]]:
    """Read a receptor-response table in the layout of Hallem & Carlson (2006), as released.

    The released table (e.g. ``Hallem_Carlson_2006.csv`` as shipped in drosolf) is: one or more header lines whose
    first cell is ``odor`` (a glomerulus line, then the receptor line; the **last** header line names the
    columns, a blank name there is taken from an earlier header line), one line per odour (name, then one
    response per receptor, in Hz relative to the spontaneous rate, so possibly negative), a line named
    ``spontaneous firing rate``, and optionally a ``cas_number`` column (dropped). With ``add_spontaneous`` the
    spontaneous rate is added to every odour and negative rates are clipped to 0 (absolute rates, as
    :func:`load_hallem`); without it the values are taken as absolute rates (a spontaneous line, if present, is
    dropped) and must be ``>= 0``. Comma-separated for ``.csv``, tab-separated for ``.tsv``; blank lines are
    skipped.

    Args:
        path: the table (``.csv`` or ``.tsv``, UTF-8).
        add_spontaneous: whether the values are changes from the spontaneous rate (the released table) or
            absolute rates.

    Returns:
        ``(orn, odour_names, receptor_names)``: receptor rates in Hz, float64, shape ``(K, n_receptors)``, ``>= 0``;
        the ``K`` odour names and the receptor names in file order.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: naming the file, the line and the column: an unknown extension, an empty table, a line with
            another number of cells than the header, a cell that is not a finite number, a missing or blank
            odour/receptor name, a repeated odour name, a missing spontaneous line (``add_spontaneous=True``), or
            a negative absolute rate (``add_spontaneous=False``).

    References:
        Hallem & Carlson, "Coding of odors by a receptor repertoire", Cell 2006 (the table of responses of 24
        receptors to 110 odours).

    Example:
        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "hc.csv"
        >>> _ = f.write_text("odor,2a,7a\\nethyl acetate,-3,40\\nspontaneous firing rate,8,17\\n")
        >>> orn, odours, receptors = read_hallem_csv(f)
        >>> orn.tolist(), odours, receptors
        ([[5.0, 57.0]], ['ethyl acetate'], ['2a', '7a'])
    """
    file = os.fspath(path)
    ext = os.path.splitext(file)[1].lower()
    if ext not in DELIMITERS:
        raise ValueError(f"{file}: expected a .csv or .tsv table, got extension {ext!r}")
    if not os.path.isfile(file):
        raise FileNotFoundError(f"{file}: no such file")
    try:
        with open(file, newline="", encoding="utf-8-sig") as handle:
            lines = [(n, row) for n, row in enumerate(csv.reader(handle, delimiter=DELIMITERS[ext]), 1) if row]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{file}: not a readable UTF-8 table ({exc})") from exc
    lines = [(n, [cell.strip() for cell in row]) for n, row in lines if any(cell.strip() for cell in row)]
    if not lines:
        raise ValueError(f"{file}: the table is empty")
    headers = []
    while lines and lines[0][1][0].lower() in HEADER_CELLS:
        headers.append(lines.pop(0))
    if not headers:
        raise ValueError(f"{file}: line 1 must be a header starting with 'odor' (then one name per receptor)")
    width = len(headers[-1][1])
    for n, row in headers:
        if len(row) != width:
            raise ValueError(f"{file}: header line {n} has {len(row)} cells, the last header line {width}")
    names = []
    for j in range(1, width):
        candidates = [row[j] for _, row in reversed(headers) if row[j]]
        name = headers[-1][1][j] or next((c for c in candidates if c.lower() in DROPPED_COLUMNS), "")
        if not name:
            raise ValueError(f"{file}: column {j + 1} has no receptor name in header line {headers[-1][0]}")
        names.append(name)
    keep = [j for j, name in enumerate(names, 1) if name.lower() not in DROPPED_COLUMNS]
    if not keep:
        raise ValueError(f"{file}: no receptor columns (only {names})")
    receptors = [names[j - 1] for j in keep]
    odours: list[str] = []
    values: list[list[float]] = []
    spontaneous: list[float] | None = None
    first_line: dict[str, int] = {}
    for n, row in lines:
        if len(row) != width:
            raise ValueError(f"{file}: line {n} has {len(row)} cells, the header has {width}")
        name = row[0]
        if not name:
            raise ValueError(f"{file}: line {n} has no odour name (column 'odor')")
        numbers_row = []
        for j in keep:
            try:
                value = float(row[j])
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise ValueError(
                    f"{file}: line {n} ({name!r}), column {names[j - 1]!r}: expected a finite number (Hz), "
                    f"got {row[j]!r}"
                )
            numbers_row.append(value)
        if name.lower() == SPONTANEOUS_ROW:
            spontaneous = numbers_row
            continue
        if name in first_line:
            raise ValueError(f"{file}: line {n} repeats odour {name!r} of line {first_line[name]}")
        first_line[name] = n
        if not add_spontaneous:
            bad = next((i for i, v in enumerate(numbers_row) if v < 0), None)
            if bad is not None:
                raise ValueError(
                    f"{file}: line {n} ({name!r}), column {receptors[bad]!r}: absolute rates must be >= 0, got "
                    f"{numbers_row[bad]:g} (for changes from the spontaneous rate, give a '{SPONTANEOUS_ROW}' line "
                    "and keep add_spontaneous=True, i.e. drop --absolute)"
                )
        odours.append(name)
        values.append(numbers_row)
    if not odours:
        raise ValueError(f"{file}: no odour lines after the header")
    orn = np.asarray(values, dtype=np.float64)
    if add_spontaneous:
        if spontaneous is None:
            raise ValueError(
                f"{file}: no '{SPONTANEOUS_ROW}' line; the released table gives changes from it (if the "
                "values are absolute rates: add_spontaneous=False, or --absolute on the command line)"
            )
        orn = np.clip(orn + np.asarray(spontaneous), 0.0, None)
    return orn, odours, receptors


def synthetic_odors(
    rng: np.random.Generator,
    n_odors: int,
    *,
    n_glomeruli: int = 24,
    n_families: int = 4,
    similarity: float = 0.7,
    spontaneous: float = 8.0,
    scale: float = 60.0,
) -> NDArray[np.float64]:
    r"""A synthetic receptor-response set with controlled similarity (used when Hallem-Carlson is not installed).

    Each odour belongs to one of ``n_families``; its log-response is
    :math:`\sqrt{\rho}\,f_{fam} + \sqrt{1-\rho}\,e`, with family and private patterns i.i.d. standard normal, and
    the receptor rate is ``spontaneous + scale * exp(log-response - 1)``: heavy-tailed, non-negative, with a within-
    family correlation controlled by ``similarity``.

    Args:
        rng: numpy generator (from ``nips25_shared.seed_everything``).
        n_odors: number of odours ``K >= 2``.
        n_glomeruli: number of receptor types (24 as in Hallem-Carlson).
        n_families: number of odour families (groups of similar odours).
        similarity: :math:`\rho \in [0, 1)`, the share of the family pattern.
        spontaneous: spontaneous rate (Hz) added to every receptor.
        scale: rate scale (Hz).

    Returns:
        Receptor rates (Hz), shape ``(n_odors, n_glomeruli)``.

    Raises:
        ValueError: on out-of-range arguments.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if isinstance(n_odors, bool) or not isinstance(n_odors, numbers.Integral) or n_odors < 2:
        raise ValueError(f"n_odors must be >= 2, got {n_odors}")
    for name, value in (("n_glomeruli", n_glomeruli), ("n_families", n_families)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if not 0.0 <= similarity < 1.0:
        raise ValueError(f"similarity must be in [0, 1), got {similarity}")
    if not (math.isfinite(spontaneous) and spontaneous >= 0):
        raise ValueError(f"spontaneous must be finite and >= 0 (Hz), got {spontaneous}")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be finite and > 0 (Hz), got {scale}")
    families = rng.standard_normal((n_families, n_glomeruli))
    which = np.arange(n_odors) % n_families
    private = rng.standard_normal((n_odors, n_glomeruli))
    log_resp = np.sqrt(similarity) * families[which] + np.sqrt(1.0 - similarity) * private
    return spontaneous + scale * np.exp(log_resp - 1.0)


def hard_subset(pn: ArrayLike, k: int) -> NDArray[np.intp]:
    """Indices of a fixed set of ``k`` similar odours: the most "central" odour and its ``k-1`` nearest neighbours.

    Similarity is the Pearson correlation of PN response vectors; the centre is the odour of highest mean
    correlation to all others. Deterministic (ties broken by index).

    Args:
        pn: PN rates, shape ``(K, n_glomeruli)``.
        k: subset size, ``2 <= k <= K``.

    Returns:
        Sorted indices, shape ``(k,)``.

    Raises:
        ValueError: if ``k`` is out of range or ``pn`` malformed.
    """
    pn = _check_matrix(pn, "pn")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 2 <= k <= pn.shape[0]:
        raise ValueError(f"k must be in [2, {pn.shape[0]}], got {k}")
    corr = np.nan_to_num(np.atleast_2d(np.corrcoef(pn)), nan=0.0)
    centre = int(np.argmax(corr.mean(axis=1)))
    order = np.argsort(-corr[centre], kind="stable")
    return np.sort(order[:k])
