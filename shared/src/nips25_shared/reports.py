"""Claim reports: ``results.json`` and ``report.md`` for one reproduction, ``SUMMARY.md`` for all of them.

A claim pairs the paper's statement with what ran: the measured value, a criterion written before running and
``holds`` computed from the measurement (contract, section 4).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import math
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nips25_shared.cache import atomic_write

__all__ = ["Claim", "Report", "environment", "git_commit", "load_report", "summarize", "write_report"]

SCHEMA_VERSION = 1
_LIBRARIES = (
    "numpy", "scipy", "scikit-learn", "torch", "jax", "jaxlib", "transformers", "peft", "accelerate",
    "faiss-cpu", "optax", "optimistix", "dgl", "diffusers", "matplotlib",
)  # fmt: skip


def _jsonable(value: Any, where: str) -> Any:
    """Convert numpy scalars/arrays and tuples to plain JSON types; reject what JSON cannot hold."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else str(v)  # JSON has no nan/inf: keep them visible as text
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist(), where)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{where} holds a {type(value).__name__}, which a report cannot store as JSON")


@dataclass(frozen=True)
class Claim:
    """One checked claim of a paper (contract, section 4).

    Attributes:
        id: short kebab-case identifier, unique within a report (``"port-beats-baselines"``).
        statement: the paper's claim in one line.
        paper: the paper's figure (number, string or mapping), or ``None`` where the paper states none.
        measured: what we measured (number, string, list or mapping of those).
        criterion: what "holds" means, fixed before the run (a direction, a tolerance, an ordering).
        holds: whether the criterion is met by ``measured``, computed from what ran.
        scale_note: how our setting differs from the paper's.
    """

    id: str
    statement: str
    paper: Any
    measured: Any
    criterion: str
    holds: bool
    scale_note: str

    def __post_init__(self) -> None:
        for name in ("id", "statement", "criterion", "scale_note"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"Claim.{name} must be a non-empty string, got {value!r}")
        if not isinstance(self.holds, (bool, np.bool_)):
            raise TypeError(f"Claim.holds must be a bool computed from the measurement, got {self.holds!r}")
        object.__setattr__(self, "holds", bool(self.holds))
        object.__setattr__(self, "paper", _jsonable(self.paper, f"Claim({self.id}).paper"))
        object.__setattr__(self, "measured", _jsonable(self.measured, f"Claim({self.id}).measured"))


def git_commit(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The commit the run came from: ``$NIPS25_GIT_COMMIT`` if set, else ``git rev-parse HEAD`` in ``cwd``.

    A ``-dirty`` suffix marks tracked files changed since that commit (untracked and ignored files, such as
    ``reports/``, do not count). ``None`` outside a git checkout or without git.

    Example:
        >>> import os
        >>> os.environ["NIPS25_GIT_COMMIT"] = "0123abc"; git_commit()
        '0123abc'
        >>> del os.environ["NIPS25_GIT_COMMIT"]
    """
    import subprocess

    given = os.environ.get("NIPS25_GIT_COMMIT", "").strip()
    if given:
        return given
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd, capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head or None


def environment() -> dict[str, Any]:
    """Python, platform, CPU, GPU (from torch/jax when already imported), versions of key libraries, the git
    commit (:func:`git_commit`) and the machine's load average (1, 5, 15 min) when the report is made.
    """
    versions: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"] or ""
        if name.lower().startswith("nips25-") or name.lower() in _LIBRARIES:
            versions[name.lower()] = dist.version
    gpu: list[str] = []
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        gpu = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    jax = sys.modules.get("jax")
    if jax is not None and not gpu:
        gpu = [str(d) for d in jax.devices() if d.platform != "cpu"]
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "gpu": gpu,
        "versions": dict(sorted(versions.items())),
        "git_commit": git_commit(),
        "load_average": [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }


@dataclass
class Report:
    """The result of one reproduction run.

    Attributes:
        package: the package slug (``"routing"``).
        title: the paper's title.
        profile: ``"quick"`` or ``"paper"``.
        seed: the seed the run used.
        config: the run's configuration (JSON-serialisable).
        claims: the checked claims.
        wall_time_s: wall-clock seconds of the run.
        figures: file names of figures written beside the report (relative to its directory).
        notes: free text shown under the table (data source, caveats).
        environment: filled by :func:`environment` when not given.
        created: ISO-8601 UTC time of creation.
    """

    package: str
    title: str
    profile: str
    seed: int
    config: dict[str, Any]
    claims: list[Claim]
    wall_time_s: float
    figures: list[str] = field(default_factory=list)
    notes: str = ""
    environment: dict[str, Any] = field(default_factory=environment)
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def __post_init__(self) -> None:
        if not self.package:
            raise ValueError("Report.package must be the package slug")
        ids = [c.id for c in self.claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Report.claims has duplicate ids: {ids}")
        if not all(isinstance(c, Claim) for c in self.claims):
            raise TypeError("Report.claims must be a list of Claim")
        if not math.isfinite(self.wall_time_s) or self.wall_time_s < 0:
            raise ValueError(f"Report.wall_time_s must be finite and >= 0, got {self.wall_time_s}")
        self.config = _jsonable(self.config, "Report.config")

    def to_dict(self) -> dict[str, Any]:
        """The report as the JSON object stored in ``results.json``."""
        out = dataclasses.asdict(self)
        out["schema_version"] = SCHEMA_VERSION
        out["all_hold"] = all(c.holds for c in self.claims)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """Inverse of :meth:`to_dict`."""
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in fields}
        kwargs["claims"] = [Claim(**c) for c in data["claims"]]
        return cls(**kwargs)


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_cell(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(_cell(v) for v in value) + "]"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _markdown(report: Report) -> str:
    env = report.environment
    lines = [
        f"# {report.package}: {report.title}",
        "",
        f"Profile `{report.profile}`, seed {report.seed}, wall time {report.wall_time_s:.1f} s, "
        f"{env.get('cpu', '?')} ({env.get('cpu_count', '?')} cores), GPU: {', '.join(env.get('gpu') or []) or 'none'}.",
        "",
        "| claim | statement | paper | ours | criterion | holds | scale |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in report.claims:
        lines.append(
            f"| `{c.id}` | {_cell(c.statement)} | {_cell(c.paper)} | {_cell(c.measured)} | {_cell(c.criterion)} "
            f"| {'yes' if c.holds else '**no**'} | {_cell(c.scale_note)} |"
        )
    if report.notes:
        lines += ["", report.notes]
    for fig in report.figures:
        lines += ["", f"![{fig}]({fig})"]
    lines += ["", "## Configuration", "", "```json", json.dumps(report.config, indent=2, sort_keys=True), "```"]
    versions = ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items())
    lines += ["", f"Python {env.get('python')}; {versions}.", ""]
    return "\n".join(lines)


def write_report(report: Report, out_dir: str | os.PathLike[str]) -> Path:
    """Write ``results.json`` and ``report.md`` for ``report`` into ``out_dir`` (created if missing).

    Both files are written atomically. Figures listed in ``report.figures`` must already exist in ``out_dir``.

    Returns:
        The path of ``results.json``.

    Raises:
        FileNotFoundError: if a listed figure is missing from ``out_dir``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for fig in report.figures:
        if not (out / fig).is_file():
            raise FileNotFoundError(f"Report.figures names {fig!r}, which is not in {out}")
    results = out / "results.json"
    atomic_write(results, (json.dumps(report.to_dict(), indent=2) + "\n").encode())
    atomic_write(out / "report.md", _markdown(report).encode())
    return results


def load_report(path: str | os.PathLike[str]) -> Report:
    """Read a ``results.json`` (or the directory holding it) back into a :class:`Report`."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    return Report.from_dict(json.loads(p.read_text()))


def summarize(reports_dir: str | os.PathLike[str], *, packages: Sequence[str] | None = None) -> Path:
    """Write ``<reports_dir>/SUMMARY.md``: the runs (profile, wall time, commit, load) and one row per claim.

    The header names the commit every report was made from (from each report's ``environment["git_commit"]``),
    or says in bold that they come from several commits.

    Args:
        reports_dir: directory holding ``<slug>/results.json`` files.
        packages: slugs expected; a missing one gets a row saying it has no report.

    Returns:
        The path of ``SUMMARY.md``.
    """
    root = Path(reports_dir)
    root.mkdir(parents=True, exist_ok=True)
    found = {p.parent.name: load_report(p) for p in sorted(root.glob("*/results.json"))}
    slugs = sorted(set(found) | set(packages or ()))
    n_claims = sum(len(r.claims) for r in found.values())
    n_hold = sum(c.holds for r in found.values() for c in r.claims)
    commits = sorted({str(r.environment.get("git_commit")) for r in found.values()})
    if len(commits) == 1 and commits[0] != "None":
        origin = f"Every report was made from commit `{commits[0]}`."
    else:
        origin = f"**The reports come from {len(commits)} different commits** ({', '.join(f'`{c}`' for c in commits)})."
    total = sum(r.wall_time_s for r in found.values())
    lines = [
        "# nips25 reproduction summary",
        "",
        f"Regenerated {datetime.now(UTC).isoformat(timespec='seconds')}. {origin} "
        f"{len(found)} reports, {n_hold} of {n_claims} claims hold at our scale. "
        "Each claim's criterion was fixed in code before the run; see each package's report for the scale notes.",
        "",
        f"## Runs (wall time {total:.0f} s in all)",
        "",
        "| package | profile | wall time (s) | commit | load average at the end (1/5/15 min) | cores | finished |",
        "|---|---|---|---|---|---|---|",
    ]
    for slug in slugs:
        if slug in found:
            rep, env = found[slug], found[slug].environment
            load = "/".join(f"{v:.1f}" for v in env.get("load_average") or ()) or "?"
            lines.append(
                f"| {slug} | {rep.profile} | {rep.wall_time_s:.1f} | `{str(env.get('git_commit'))[:12]}` "
                f"| {load} | {env.get('cpu_count', '?')} | {rep.created} |"
            )
    lines += [
        "",
        "## Claims",
        "",
        "| package | profile | claim | paper | ours | holds |",
        "|---|---|---|---|---|---|",
    ]
    for slug in slugs:
        if slug not in found:
            lines.append(f"| {slug} | | no report | | | |")
            continue
        rep = found[slug]
        for c in rep.claims:
            lines.append(
                f"| [{slug}]({slug}/report.md) | {rep.profile} | `{c.id}`: {_cell(c.statement)} | {_cell(c.paper)} "
                f"| {_cell(c.measured)} | {'yes' if c.holds else '**no**'} |"
            )
    path = root / "SUMMARY.md"
    atomic_write(path, ("\n".join(lines) + "\n").encode())
    return path


def _main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m nips25_shared", description="Summarise reports.")
    parser.add_argument("command", choices=["summarize"])
    parser.add_argument("reports_dir", nargs="?", default="reports")
    parser.add_argument("--packages", nargs="*", default=None, help="slugs expected to have a report")
    args = parser.parse_args(argv)
    print(summarize(args.reports_dir, packages=args.packages))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
