"""Release checks of the nips25 distributions, shared by ``noxfile.py`` and ``.github/workflows/release.yml``.

A release tag names one distribution and its version: ``nips25-<slug>-v<X.Y.Z>`` (or ``nips25-shared-v<X.Y.Z>``).

    python tools/release.py tag nips25-routing-v0.2.0     print the slug ("routing") if the tag matches
                                                          pyproject.toml and the CHANGELOG; exit 1 otherwise
    python tools/release.py changelog routing             check the top CHANGELOG section names the version
    python tools/release.py quickstart routing            print the README's first Quickstart python block

Standard library only: the workflow runs it before any environment exists.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAG = re.compile(r"^nips25-(?P<slug>[a-z0-9]+)-v(?P<version>\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?)$")
# Keep a Changelog: "## [X.Y.Z] - YYYY-MM-DD" (an "## [Unreleased]" section may stand above it)
SECTION = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?\s*$")


class ReleaseError(ValueError):
    """A release precondition does not hold; the message says which file and what was expected."""


def package_dir(slug: str) -> Path:
    """The directory of the distribution ``nips25-<slug>`` (``shared/`` for ``shared``)."""
    path = ROOT / "shared" if slug == "shared" else ROOT / "packages" / slug
    if not (path / "pyproject.toml").is_file():
        raise ReleaseError(f"no distribution nips25-{slug}: {path / 'pyproject.toml'} does not exist")
    return path


def version(slug: str) -> str:
    """The ``project.version`` of ``nips25-<slug>``'s pyproject.toml."""
    return str(tomllib.loads((package_dir(slug) / "pyproject.toml").read_text())["project"]["version"])


def changelog_version(slug: str) -> str:
    """The version of the top released section of the package's CHANGELOG.md (``## [X.Y.Z] - YYYY-MM-DD``).

    Raises:
        ReleaseError: if the CHANGELOG is missing or its top released section is not in that form.
    """
    path = package_dir(slug) / "CHANGELOG.md"
    if not path.is_file():
        raise ReleaseError(f"{path}: missing")
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.startswith("## "):
            continue
        match = SECTION.match(line)
        if match is None:
            raise ReleaseError(f"{path}:{number}: expected '## [X.Y.Z] - YYYY-MM-DD', got {line!r}")
        if match["version"].lower() == "unreleased":
            continue
        if match["date"] is None:
            raise ReleaseError(f"{path}:{number}: section {match['version']} has no date ('## [X.Y.Z] - YYYY-MM-DD')")
        return match["version"]
    raise ReleaseError(f"{path}: no released section ('## [X.Y.Z] - YYYY-MM-DD')")


def check_changelog(slug: str) -> str:
    """Check that the top released CHANGELOG section names the pyproject version; return the version."""
    want, got = version(slug), changelog_version(slug)
    if want != got:
        raise ReleaseError(
            f"nips25-{slug}: pyproject.toml says version {want} but the top CHANGELOG section is {got}; "
            f"add a section '## [{want}] - YYYY-MM-DD'"
        )
    return want


def check_tag(tag: str) -> str:
    """Check a release tag against the package's pyproject and CHANGELOG; return the slug.

    Raises:
        ReleaseError: if the tag is not ``nips25-<slug>-v<X.Y.Z>``, names no distribution, or its version differs
            from pyproject.toml or from the top CHANGELOG section.
    """
    match = TAG.match(tag)
    if match is None:
        raise ReleaseError(f"tag {tag!r} is not of the form nips25-<slug>-v<X.Y.Z>")
    slug = match["slug"]
    if match["version"] != version(slug):
        raise ReleaseError(
            f"tag {tag} names version {match['version']}, pyproject.toml of nips25-{slug} has {version(slug)}"
        )
    check_changelog(slug)
    return slug


def quickstart(slug: str) -> str:
    """The first ```` ```python ```` block under the README's ``## Quickstart`` heading.

    Raises:
        ReleaseError: if the README has no such heading or no python block under it.
    """
    path = package_dir(slug) / "README.md"
    text = path.read_text()
    heading = re.search(r"^## Quickstart\s*$", text, re.M)
    if heading is None:
        raise ReleaseError(f"{path}: no '## Quickstart' section")
    section = text[heading.end() :]
    following = re.search(r"^## ", section, re.M)
    section = section[: following.start()] if following else section
    block = re.search(r"^```python\s*\n(.*?)^```\s*$", section, re.M | re.S)
    if block is None:
        raise ReleaseError(f"{path}: no ```python block under '## Quickstart'")
    return block.group(1)


def main(argv: list[str]) -> int:
    commands = {"tag": check_tag, "changelog": check_changelog, "quickstart": quickstart}
    if len(argv) != 2 or argv[0] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        print(commands[argv[0]](argv[1]), end="" if argv[0] == "quickstart" else "\n")
    except ReleaseError as err:
        print(f"release check failed: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
