"""Where the labelled benchmark's packages come from and how gradlint is run on them.

A package is a pinned release fetched with ``pip download --no-deps`` into
``benchmarks/.cache/`` (outside git) and unpacked there, or, with ``--source-dir DIR``,
an already unpacked tree ``DIR/<package>-<version>/``.  gradlint runs through its
command line, from the package root, on the files the labels list.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import corpus
from common import REPO, gradlint_argv, gradlint_env
from labelset import LabelFile

if sys.path[:1] != [str(REPO)]:  # lint_text lints in this process: this checkout's gradlint, not an installed one
    sys.path.insert(0, str(REPO))

CACHE = Path(__file__).resolve().parent / ".cache"
GRADLINT_TIMEOUT_S = 1800.0


class SourceError(Exception):
    """A package that could not be fetched, or gradlint failing on it."""


@dataclass(frozen=True)
class Finding:
    """One gradlint diagnostic, its path relative to the package root."""

    path: str
    line: int
    code: str
    message: str


def download(labels: LabelFile, dist_dir: Path) -> Path:
    """Download the pinned archive (sdist, or wheel when the labels say so)."""
    pkg = corpus.Package(labels.package, labels.version, "", sdist=labels.dist == "sdist")
    found = corpus.find_archive(pkg, dist_dir)
    if found:
        return found
    dist_dir.mkdir(parents=True, exist_ok=True)
    # pip prepares an sdist's metadata with its build backend: try the backends installed here
    # first, then an isolated build environment (pip fetches the backend, e.g. pdm or maturin).
    attempts = ([["--no-binary", ":all:", "--no-build-isolation"], ["--no-binary", ":all:"]] if pkg.sdist
                else [["--only-binary", ":all:"]])
    errors: list[str] = []
    for kind in attempts:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--ignore-requires-python", *kind,
               "--disable-pip-version-check", "--progress-bar", "off", "-q",
               "-d", str(dist_dir), pkg.pin]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        found = corpus.find_archive(pkg, dist_dir)
        if proc.returncode == 0 and found is not None:
            return found
        errors += [ln.strip() for ln in proc.stderr.splitlines() if "error" in ln.lower()]
    found = corpus.fetch_from_index(pkg, dist_dir)
    if found is not None:
        return found
    why = "; ".join(dict.fromkeys(errors[:3])) or "no archive"
    raise SourceError(f"pip download {pkg.pin} failed: {why}")


def package_root(labels: LabelFile, source_dir: Path | None) -> Path:
    """The unpacked root of the labelled package (fetched unless ``source_dir``)."""
    if source_dir is not None:
        root = source_dir / labels.slug
        if not root.is_dir():
            raise SourceError(f"{labels.slug}: no folder {labels.slug} in {source_dir}")
        return root
    dest = CACHE / "src" / f"{labels.slug}-{labels.dist}"
    if dest.is_dir():
        return dest
    archive = download(labels, CACHE / "dist")
    return corpus.unpack(archive, dest)


def _parse(stdout: str, where: str) -> list[Finding]:
    try:
        rows = json.loads(stdout)
        return [Finding(r["path"].replace("\\", "/"), int(r["line"]), r["code"], r["message"])
                for r in rows]
    except (ValueError, KeyError, TypeError) as exc:
        raise SourceError(f"{where}: unreadable gradlint output ({exc})") from None


def _run(args: Sequence[str], root: Path, where: str, stdin: str | None = None) -> list[Finding]:
    argv = [*gradlint_argv(), "check", "--format", "json", "--no-cache", "--isolated",
            "--exit-zero", *args]
    try:
        proc = subprocess.run(argv, cwd=root, input=stdin, capture_output=True, text=True,
                              env=gradlint_env(), timeout=GRADLINT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SourceError(f"{where}: gradlint timed out") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise SourceError(f"{where}: gradlint failed: {last}")
    return _parse(proc.stdout, where)


def lint_files(root: Path, files: Sequence[str], select: str | None = None) -> list[Finding]:
    """gradlint's findings on ``files`` (relative to ``root``), run from ``root``."""
    extra = ["--select", select] if select else []
    return _run([*extra, *files], root, root.name)


def lint_text(root: Path, path: str, text: str, select: str | None = None) -> list[Finding]:
    """gradlint's findings on ``text`` as if it were the file ``root/path``, through the public API
    in this process (what ``gradlint check --isolated`` would report on it, without a process per
    mutant)."""
    from gradlint import SettingsError
    from gradlint.config import Overrides, settings_for
    from gradlint.engine import Reads, lint_source

    overrides = Overrides(select=(select,)) if select else Overrides()
    try:
        settings = settings_for(root / path, isolated=True, overrides=overrides)
    except SettingsError as exc:
        raise SourceError(f"{root.name}/{path}: {exc}") from None
    # the absolute path places the text in its package's project (imports, project root), not in this checkout
    reads = Reads()  # hears the diagnostics the text's loops give in helpers of other modules
    found = lint_source(text, str(root / path), settings, reads=reads)
    return [Finding(_relative(d.path, root, path), d.line, d.code, d.message) for d in [*found, *reads.elsewhere]]


def _relative(found: str, root: Path, path: str) -> str:
    """A diagnostic's path from the package root: ``path`` for the linted text, another module's
    file for an event of a helper written there."""
    where = Path(found)
    if not where.is_absolute() or where == root / path:
        return path
    try:
        return where.relative_to(root).as_posix()
    except ValueError:
        return where.as_posix()
