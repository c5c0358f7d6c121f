"""nox sessions of the nips25 monorepo, one per package and purpose (CONTRACT.md, section 5).

Sessions are generated from the directories under ``packages/``. Every session installs from ``uv.lock``
(``uv sync --locked``) into its own environment, since no single environment can hold every package.

    uvx nox -l                    list every session
    uvx nox -s test               lint, check-pins, then every package's tests
    uvx nox -s reproduce          every package's headline experiment, then reports/SUMMARY.md
    uvx nox -s test-<slug>        one package: ruff, mypy on its src, pytest (tests and src doctests)
    uvx nox -s release-check-<slug>   every step of a release of nips25-<slug> except the upload
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).parent / "tools"))
import release  # tools/release.py: tag, CHANGELOG and quickstart checks, shared with release.yml

nox.needs_version = ">=2024.10.9"
nox.options.default_venv_backend = "uv"
nox.options.error_on_external_run = True
nox.options.sessions = ["test"]

ROOT = Path(__file__).parent
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").is_file())
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "MPLBACKEND": "Agg"}
# Packages pinned to an old torch in their own lock fork (tool.uv.conflicts); nothing else may resolve to it.
OLD_TORCH_FORKS = {"gfm"}
RUFF = "ruff@0.17.5"
TWINE = "twine==7.0.0"
MYPY = "mypy==2.4.1"
MIN_TORCH = (2, 3)


def _meta(slug: str) -> dict:
    path = ROOT / "shared" / "pyproject.toml" if slug == "shared" else ROOT / "packages" / slug / "pyproject.toml"
    return tomllib.loads(path.read_text())


def _dist(slug: str) -> str:
    return f"nips25-{slug}"


def _sync(
    session: nox.Session, slug: str, *, groups: tuple[str, ...] = ("test",), extras: tuple[str, ...] = ()
) -> None:
    """Install one package (and its groups/extras) from the lock into this session's environment."""
    args = ["uv", "sync", "--locked", "--package", _dist(slug), "--no-default-groups"]
    declared = _meta(slug).get("dependency-groups", {})
    for group in groups:
        if group in declared:
            args += ["--group", group]
    for extra in extras:
        args += ["--extra", extra]
    session.run_install(*args, env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location}, external=True)


def _build(session: nox.Session, slug: str) -> Path:
    """Build the wheels and sdists of nips25-shared and of one package into a fresh dist/<slug>."""
    out = ROOT / "dist" / slug
    shutil.rmtree(out, ignore_errors=True)
    for dist in ("nips25-shared", _dist(slug)):
        session.run("uv", "build", "--package", dist, "--no-sources", "--out-dir", str(out), external=True)
    return out


def _env() -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE="" (unset): let Python cache bytecode in the session's environment, or every process
    # the tests start (accelerate's 2-process runs, CLI subprocesses) recompiles torch on import (~30 s each)
    return {**OFFLINE, "NIPS25_CACHE_DIR": str(ROOT / ".cache" / "nips25"), "PYTHONDONTWRITEBYTECODE": ""}


@nox.session(python=False, venv_backend="none")
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the whole repository.

    mypy needs each package's own environment (no single one holds them all), so it runs on every ``src/`` in the
    ``test-shared`` and ``test-<slug>`` sessions.
    """
    session.run("uvx", RUFF, "check", ".", external=True)
    session.run("uvx", RUFF, "format", "--check", ".", external=True)


@nox.session(name="test-shared")
def test_shared(session: nox.Session) -> None:
    """nips25-shared: mypy on src, then its tests."""
    _sync(session, "shared", groups=("test", "distributed"))
    session.install(MYPY)
    session.run("mypy", "--cache-dir", str(ROOT / ".mypy_cache" / "shared"), "shared/src")
    session.run("pytest", "shared/tests", "shared/src", "--doctest-modules", *session.posargs, env=_env())


@nox.session(name="check-pins", python=False, venv_backend="none")
def check_pins(session: nox.Session) -> None:
    """The lock is current; sibling ranges admit the workspace's versions; only old-torch forks get torch<2.3;
    every CHANGELOG's top section names its pyproject version."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    session.run("uv", "lock", "--check", external=True)
    versions = {"nips25-shared": _meta("shared")["project"]["version"]}
    versions.update({_dist(s): _meta(s)["project"]["version"] for s in PACKAGES})
    problems = []
    for slug in ["shared", *PACKAGES]:
        try:
            release.check_changelog(slug)
        except release.ReleaseError as err:
            problems.append(str(err))
        meta = _meta(slug)["project"]
        deps = list(meta.get("dependencies", []))
        deps += [d for extra in meta.get("optional-dependencies", {}).values() for d in extra]
        for dep in map(Requirement, deps):
            if dep.name in versions and not dep.specifier.contains(versions[dep.name], prereleases=True):
                problems.append(f"{slug}: {dep} does not admit the workspace's {dep.name} {versions[dep.name]}")
    for slug in PACKAGES:
        if slug in OLD_TORCH_FORKS:
            continue
        out = session.run(
            "uv", "export", "--locked", "--package", _dist(slug), "--no-hashes", "--all-extras", "--no-header",
            "--no-emit-workspace", silent=True, external=True,
        )  # fmt: skip
        for line in str(out).splitlines():
            if line.startswith("torch=="):
                torch = Version(line.split("==")[1].split(";")[0].strip())
                if torch.release[:2] < MIN_TORCH:
                    problems.append(f"{slug}: resolves to torch {torch}, below {MIN_TORCH}")
    if problems:
        session.error("\n".join(problems))
    session.log(f"pins consistent for nips25-shared and {len(PACKAGES)} packages")


def _make_package_sessions(slug: str) -> None:
    pkg = f"packages/{slug}"
    extras = tuple(_meta(slug).get("tool", {}).get("nips25", {}).get("reproduce-extras", ()))

    @nox.session(name=f"test-{slug}")
    def test(session: nox.Session) -> None:
        """ruff on the package, mypy on its src, then its tests, in the package's own environment."""
        session.run("uvx", RUFF, "check", pkg, external=True)
        session.run("uvx", RUFF, "format", "--check", pkg, external=True)
        _sync(session, slug)
        session.install(MYPY)
        session.run("mypy", "--cache-dir", str(ROOT / ".mypy_cache" / slug), f"{pkg}/src")
        # the tests, then every docstring example in src/ (--doctest-modules), in one pytest run
        session.run("pytest", f"{pkg}/tests", f"{pkg}/src", "--doctest-modules", *session.posargs, env=_env())

    @nox.session(name=f"reproduce-{slug}")
    def reproduce(session: nox.Session) -> None:
        """The package's headline experiment on its default input; writes reports/<slug>/."""
        _sync(session, slug, groups=(), extras=extras)
        args = session.posargs or ["--profile", "quick"]
        session.run(f"nips25-{slug}", "reproduce", "--out", f"reports/{slug}", *args, env=_env())

    @nox.session(name=f"bench-{slug}")
    def bench(session: nox.Session) -> None:
        """The package's benchmark side by side with its peer; prints the ratio."""
        _sync(session, slug, groups=("test", "bench"), extras=extras)
        for script in sorted((ROOT / pkg / "benchmarks").glob("bench_*.py")):
            session.run("python", str(script), *session.posargs, env=_env())

    @nox.session(name=f"build-{slug}", python=False, venv_backend="none")
    def build(session: nox.Session) -> None:
        """Wheel and sdist of the package and of nips25-shared, built without workspace sources, in dist/<slug>."""
        _build(session, slug)

    @nox.session(name=f"smoke-{slug}", venv_backend="venv")
    def smoke(session: nox.Session) -> None:
        """pip-install the built wheels alone in a clean venv; import, --help, then the README quickstart."""
        out = _build(session, slug)  # always rebuilt: never reuse stale wheels
        wheels = sorted(str(w) for w in out.glob("*.whl"))
        session.run("python", "-m", "pip", "install", "--quiet", *wheels)
        _installed_checks(session, slug)

    @nox.session(name=f"release-check-{slug}", venv_backend="venv")
    def release_check(session: nox.Session) -> None:
        """Every step of release.yml for nips25-<slug> except the upload (tag from $RELEASE_TAG, else the version's)."""
        _release_check(session, slug)


def _installed_checks(session: nox.Session, slug: str) -> None:
    """In a venv holding only the built wheels: import, ``--help``, then the README quickstart in an empty folder."""
    module = f"nips25_{slug}"
    session.run("python", "-c", f"import {module}; print({module}.__name__, {module}.__version__)")
    if slug != "shared":
        session.run(f"nips25-{slug}", "--help", env=OFFLINE, silent=True)
    work = Path(tempfile.mkdtemp(prefix=f"quickstart-{slug}-"))
    script = work / "quickstart.py"
    script.write_text(release.quickstart(slug))
    session.log(f"running the README quickstart of nips25-{slug} ({script})")
    with session.chdir(work):
        session.run("python", str(script), env={**OFFLINE, "NIPS25_CACHE_DIR": str(work / "cache")})


def _release_check(session: nox.Session, slug: str) -> None:
    dist = "nips25-shared" if slug == "shared" else _dist(slug)
    tag = os.environ.get("RELEASE_TAG") or f"{dist}-v{release.version(slug)}"
    try:
        if release.check_tag(tag) != slug:
            session.error(f"tag {tag} names another distribution than {dist}")
    except release.ReleaseError as err:
        session.error(str(err))
    session.log(f"tag {tag} matches pyproject.toml and CHANGELOG.md")
    out = ROOT / "dist" / f"release-{slug}"
    shutil.rmtree(out, ignore_errors=True)
    session.run("uv", "build", "--package", dist, "--no-sources", "--out-dir", str(out), external=True)
    artifacts = sorted(str(p) for p in out.iterdir() if p.suffix in {".whl", ".gz"})
    session.run("uvx", TWINE, "check", "--strict", *artifacts, external=True)
    wheel = [str(w) for w in out.glob("*.whl")]
    links: list[str] = []
    if slug != "shared":  # nips25-shared's wheel from this tree, in case the registry has not got its version yet
        deps = out / "deps"
        session.run("uv", "build", "--package", "nips25-shared", "--no-sources", "--wheel", "--out-dir", str(deps),
                    external=True)  # fmt: skip
        links = ["--find-links", str(deps)]
    session.run("python", "-m", "pip", "install", "--quiet", *links, *wheel)
    _installed_checks(session, slug)
    session.log(f"{dist} {release.version(slug)} is ready: push the tag {tag} to publish it (release.yml)")


@nox.session(name="release-check-shared", venv_backend="venv")
def release_check_shared(session: nox.Session) -> None:
    """Every step of release.yml for nips25-shared except the upload."""
    _release_check(session, "shared")


for _slug in PACKAGES:
    _make_package_sessions(_slug)


def _run_sessions_in_parallel(session: nox.Session, names: list[str], jobs: int) -> None:
    """Run ``nox -s NAME`` for every name, ``jobs`` at a time, printing each session's whole log when it ends.

    Each session still installs into its own environment under ``.nox/``; only the wall clock is shared. A session's
    output is buffered in a temporary file and printed in one piece, so logs never interleave.
    """
    import subprocess
    import time
    from concurrent.futures import ThreadPoolExecutor

    def one(name: str) -> tuple[str, int, float, str]:
        start = time.monotonic()
        with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as log:
            proc = subprocess.run(
                [sys.executable, "-m", "nox", "--no-color", "-f", str(ROOT / "noxfile.py"), "-s", name],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False,
            )  # fmt: skip
            log.seek(0)
            return name, proc.returncode, time.monotonic() - start, log.read()

    failed: list[str] = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, rc, seconds, text in pool.map(one, names):
            print(f"\n{'=' * 30} nox -s {name} (exit {rc}, {seconds:.0f} s) {'=' * 30}\n{text}", flush=True)
            if rc != 0:
                failed.append(name)
    if failed:
        session.error(f"failed sessions: {', '.join(failed)}")


@nox.session(python=False, venv_backend="none", requires=["lint", "check-pins"])
def test(session: nox.Session) -> None:
    """Lint, check-pins, then every package's tests (each in its own environment), two sessions at a time.

    ``uvx nox -s test -- SLUG ...`` runs only the named packages' sessions (``shared`` for ``test-shared``).
    ``NIPS25_TEST_JOBS`` sets how many sessions run at once (default: 2, or 1 on a one-core machine); the test
    sessions are independent (own environments, own mypy caches, free ports for the 2-process tests).
    """
    slugs = session.posargs or ["shared", *PACKAGES]
    unknown = sorted(set(slugs) - {"shared", *PACKAGES})
    if unknown:
        session.error(f"unknown package(s) {unknown}; choose from shared, {', '.join(PACKAGES)}")
    jobs = int(os.environ.get("NIPS25_TEST_JOBS", min(2, os.cpu_count() or 1)))
    if jobs < 1:
        session.error(f"NIPS25_TEST_JOBS must be >= 1, got {jobs}")
    _run_sessions_in_parallel(session, [f"test-{s}" for s in slugs], jobs)
    session.log(f"all test sessions passed: {', '.join(slugs)} ({jobs} at a time)")


@nox.session(requires=[f"reproduce-{s}" for s in PACKAGES])
def reproduce(session: nox.Session) -> None:
    """Every package's headline experiment, then reports/SUMMARY.md."""
    _sync(session, "shared", groups=())
    session.run("python", "-m", "nips25_shared", "summarize", "reports", "--packages", *PACKAGES)
    session.log(f"summary: {ROOT / 'reports' / 'SUMMARY.md'}")
