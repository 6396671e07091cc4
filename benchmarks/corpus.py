"""Pinned corpus of third-party packages with real PyTorch training loops.

The corpus is downloaded with ``pip download --no-deps`` (never installed, never
built) into a cache outside the repository and unpacked to
``<cache>/src/<name>-<version>/``.  The cache defaults to
``~/.cache/gradlint/corpus`` and can be moved with the ``GRADLINT_CORPUS``
environment variable.

Used by ``realworld.py`` (real-code validation, issue 3) and ``bench.py``
(performance benchmark, issue 7), and runnable on its own::

    python benchmarks/corpus.py                 # everything, prints the paths
    python benchmarks/corpus.py --set bench     # only the benchmark corpus
    python benchmarks/corpus.py --stats         # table of .py files and MB
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Package:
    """One pinned release of the corpus."""

    name: str
    version: str
    loops: str
    """The kind of training loops the package holds."""
    sdist: bool = False
    """Take the source archive: the release has no wheel on the registry."""

    @property
    def pin(self) -> str:
        """The requirement string ``name==version``."""
        return f"{self.name}=={self.version}"

    @property
    def slug(self) -> str:
        """The directory name ``name-version`` used in the cache."""
        return f"{self.name}-{self.version}"


PACKAGES: tuple[Package, ...] = (
    Package("accelerate", "1.15.0",
            "Accelerator.backward/accumulate, sync_gradients gates, utils"),
    Package("deepspeed", "0.19.8",
            "DeepSpeed engine backward/step, ZeRO optimizers", sdist=True),
    Package("flair", "0.15.1",
            "ModelTrainer loops with AMP and mini-batch chunking"),
    Package("litgpt", "0.5.13",
            "Lightning Fabric pretrain/finetune scripts, no_backward_sync"),
    Package("mmengine", "0.10.7",
            "OptimWrapper with accumulative_counts, runner loops"),
    Package("mosaicml", "0.32.1",
            "Composer Trainer: microbatching, grad accumulation, AMP"),
    Package("nanotron", "0.4",
            "3D-parallel LLM pretraining, pipeline engine backward"),
    Package("opacus", "1.6.0",
            "DP-SGD optimizers, virtual steps, BatchMemoryManager"),
    Package("pytorch-ignite", "0.5.5",
            "supervised_training_step update functions, gradient_accumulation_steps"),
    Package("pytorch-lightning", "2.6.6",
            "Trainer loops, manual optimization, accumulate_grad_batches"),
    Package("sentence-transformers", "6.2.0",
            "fit() loops with AMP, Trainer subclasses"),
    Package("skorch", "1.4.0",
            "NeuralNet.train_step with closures, accumulation recipes"),
    Package("speechbrain", "1.1.2",
            "Brain.fit_batch with grad accumulation, AMP and clipping"),
    Package("stable-baselines3", "2.9.2",
            "RL policy updates: backward, clip_grad_norm_, step per epoch"),
    Package("timm", "1.0.31",
            "ImageNet training script helpers, NativeScaler, grad clipping"),
    Package("torchtune", "0.6.1",
            "recipes with gradient accumulation over token counts"),
    Package("transformers", "5.23.0",
            "Trainer inner loop, token-count loss scaling, model helpers"),
    Package("trl", "1.16.0",
            "RL/preference trainers built on Trainer and Accelerate"),
    Package("ultralytics", "8.4.190",
            "YOLO trainer with AMP, accumulate, EMA, clip_grad_norm_"),
)
"""Every package of the corpus.  fairseq is left out: its sdist's build
requirements pull in torch, and it has no wheel for current Pythons."""

BENCH_NAMES: tuple[str, ...] = (
    "transformers", "timm", "pytorch-lightning", "accelerate", "torchtune", "ultralytics",
)
"""The benchmark corpus of issue 7."""

QUICK_NAMES: tuple[str, ...] = ("accelerate", "torchtune")
"""A small corpus for smoke tests of the scripts."""

SETS: dict[str, tuple[str, ...]] = {
    "all": tuple(p.name for p in PACKAGES),
    "bench": BENCH_NAMES,
    "quick": QUICK_NAMES,
}

ARCHIVE_SUFFIXES = (".whl", ".tar.gz", ".zip", ".tgz")


def cache_dir() -> Path:
    """The corpus cache: ``$GRADLINT_CORPUS`` or ``~/.cache/gradlint/corpus``."""
    env = os.environ.get("GRADLINT_CORPUS")
    root = Path(env) if env else Path.home() / ".cache" / "gradlint" / "corpus"
    return root.expanduser().resolve()


def get(name: str) -> Package:
    """The pinned package called ``name``."""
    for pkg in PACKAGES:
        if pkg.name == name:
            return pkg
    raise KeyError(f"{name!r} is not in the corpus; known: {', '.join(SETS['all'])}")


def select(names: Iterable[str] | None = None) -> list[Package]:
    """The pinned packages for ``names`` (all of them for ``None``)."""
    if names is None:
        return list(PACKAGES)
    return [get(n) for n in names]


def src_dir(pkg: Package, root: Path | None = None) -> Path:
    """Where ``pkg`` is (or will be) unpacked."""
    return (root or cache_dir()) / "src" / pkg.slug


def _normalize(name: str) -> str:
    """PEP 503 name normalisation with ``_`` as separator (wheel file names)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def find_archive(pkg: Package, dist: Path) -> Path | None:
    """The downloaded archive of ``pkg`` in ``dist``, if any."""
    if not dist.is_dir():
        return None
    want = f"{_normalize(pkg.name)}-{pkg.version}"
    for path in sorted(dist.iterdir()):
        if not path.name.endswith(ARCHIVE_SUFFIXES):
            continue
        stem, sep, rest = path.name.partition(f"-{pkg.version}")
        if sep and rest[:1] in ("-", ".") and f"{_normalize(stem)}-{pkg.version}" == want:
            return path
    return None


INDEX_URL = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")


def fetch_from_index(pkg: Package, dist: Path) -> Path | None:
    """Fetch ``pkg``'s archive straight from the package index (PEP 691), checking its sha256.

    The fallback for an sdist whose metadata pip cannot prepare (a ``setup.py`` that reads files
    its sdist does not ship): the archive is only read here, never built.
    """
    request = urllib.request.Request(f"{INDEX_URL}/{_normalize(pkg.name).replace('_', '-')}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            files = json.load(response)["files"]
    except (OSError, ValueError, KeyError):
        return None
    for entry in files:
        name = entry["filename"]
        suffix = next((s for s in ARCHIVE_SUFFIXES if name.endswith(s)), "")
        is_sdist = suffix != ".whl"
        if not suffix or is_sdist != pkg.sdist:
            continue
        if is_sdist:
            project, _, version = name[:-len(suffix)].rpartition("-")
        else:
            project, version = name.split("-")[:2]
        if _normalize(project) != _normalize(pkg.name) or version != pkg.version:
            continue
        try:
            with urllib.request.urlopen(entry["url"], timeout=180) as response:
                data = response.read()
        except OSError:
            return None
        expected = entry.get("hashes", {}).get("sha256")
        if expected and hashlib.sha256(data).hexdigest() != expected:
            return None
        dist.mkdir(parents=True, exist_ok=True)
        target = dist / name
        target.write_bytes(data)
        return target
    return None


def download(pkg: Package, dist: Path) -> Path:
    """Download the archive of ``pkg`` into ``dist`` with pip (no deps, no install)."""
    found = find_archive(pkg, dist)
    if found:
        return found
    dist.mkdir(parents=True, exist_ok=True)
    kind = ["--no-binary", ":all:"] if pkg.sdist else ["--only-binary", ":all:"]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *kind,
           "--disable-pip-version-check", "--progress-bar", "off", "-q",
           "-d", str(dist), pkg.pin]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    found = find_archive(pkg, dist) or fetch_from_index(pkg, dist)
    if found is None:
        raise RuntimeError(f"pip download {pkg.pin} failed:\n{proc.stderr.strip()}")
    return found


def _safe_member(dest: Path, name: str) -> bool:
    """Whether the archive member ``name`` stays inside ``dest``."""
    target = (dest / name).resolve()
    return target == dest or dest in target.parents


def _extract_zip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            if _safe_member(dest, info.filename):
                zf.extract(info, dest)


def _extract_tar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tf:
        if hasattr(tarfile, "data_filter"):
            tf.extractall(dest, filter="data")
            return
        members = [m for m in tf.getmembers()
                   if (m.isfile() or m.isdir()) and _safe_member(dest, m.name)]
        tf.extractall(dest, members=members)


def _single_top_dir(path: Path) -> Path:
    """Descend into the lone top directory of an sdist (``name-version/``)."""
    entries = list(path.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return path


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack ``archive`` to ``dest`` atomically (via a temporary sibling)."""
    if dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        if archive.name.endswith((".whl", ".zip")):
            _extract_zip(archive, tmp)
        else:
            _extract_tar(archive, tmp.resolve())
        top = _single_top_dir(tmp)
        try:
            top.rename(dest)
        except OSError:
            if not dest.is_dir():  # lost a race only if someone else finished it
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def ensure_package(pkg: Package, root: Path | None = None, *, log: bool = True) -> Path:
    """Download and unpack ``pkg`` unless it is already unpacked; return its directory."""
    root = root or cache_dir()
    dest = src_dir(pkg, root)
    if dest.is_dir():
        return dest
    start = time.perf_counter()
    archive = download(pkg, root / "dist")
    unpack(archive, dest)
    if log:
        print(f"corpus: fetched {pkg.pin} ({archive.name}) in "
              f"{time.perf_counter() - start:.1f}s", file=sys.stderr)
    return dest


def ensure(names: Iterable[str] | None = None, *, log: bool = True) -> list[Path]:
    """Make sure the packages ``names`` (default: all) are unpacked; return their dirs."""
    root = cache_dir()
    return [ensure_package(pkg, root, log=log) for pkg in select(names)]


def python_files(dirs: Iterable[Path]) -> list[Path]:
    """Every ``.py`` file under ``dirs``, sorted, without duplicates."""
    files: set[Path] = set()
    for d in dirs:
        files.update(p for p in Path(d).rglob("*.py") if p.is_file())
    return sorted(files)


def package_of(path: Path) -> tuple[Package, Path] | None:
    """The corpus package holding ``path`` and the path relative to its directory."""
    path = Path(path).resolve()
    root = cache_dir()
    for pkg in PACKAGES:
        base = src_dir(pkg, root)
        if base in path.parents:
            return pkg, path.relative_to(base)
    return None


@dataclass(frozen=True)
class Stats:
    """Size of one unpacked package, counting ``.py`` files only."""

    files: int
    bytes: int

    @property
    def mb(self) -> float:
        return self.bytes / 1e6


def stats(directory: Path) -> Stats:
    """Count the ``.py`` files under ``directory`` and their total size."""
    files = python_files([directory])
    return Stats(len(files), sum(f.stat().st_size for f in files))


def stats_table(pkgs: Sequence[Package]) -> str:
    """A Markdown table of the packages with their ``.py`` file counts and sizes."""
    lines = ["| package | version | kind | .py files | MB | loops |",
             "| --- | --- | --- | ---: | ---: | --- |"]
    total = Stats(0, 0)
    for pkg in pkgs:
        s = stats(src_dir(pkg))
        total = Stats(total.files + s.files, total.bytes + s.bytes)
        kind = "sdist" if pkg.sdist else "wheel"
        lines.append(f"| {pkg.name} | {pkg.version} | {kind} | {s.files} | {s.mb:.1f} "
                     f"| {pkg.loops} |")
    lines.append(f"| **total** | | | {total.files} | {total.mb:.1f} | |")
    return "\n".join(lines)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="packages to fetch (default: the set)")
    parser.add_argument("--set", choices=sorted(SETS), default="all",
                        help="named selection of packages (default: all)")
    parser.add_argument("--stats", action="store_true",
                        help="print a table of .py files and sizes instead of paths")
    parser.add_argument("--list", action="store_true",
                        help="print the pinned requirements and exit (no download)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: fetch the corpus and print the unpacked directories."""
    args = _parse_args(argv)
    names = args.names or list(SETS[args.set])
    if args.list:
        for pkg in select(names):
            print(f"{pkg.pin:32} {'sdist' if pkg.sdist else 'wheel':5}  {pkg.loops}")
        return 0
    print(f"corpus cache: {cache_dir()}", file=sys.stderr)
    try:
        dirs = ensure(names)
    except (RuntimeError, KeyError) as exc:
        print(f"corpus: {exc}", file=sys.stderr)
        return 1
    if args.stats:
        print(stats_table(select(names)))
    else:
        print("\n".join(str(d) for d in dirs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
