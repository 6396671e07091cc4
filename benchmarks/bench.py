"""Performance benchmark of gradlint against ruff, fixit and torchfix (issues 7 and 12).

    python benchmarks/bench.py            # full run, writes benchmarks/RESULTS.md
    python benchmarks/bench.py --quick    # smoke test on a small corpus

Fetches the benchmark corpus (``corpus.BENCH_NAMES``), installs the pinned peers
each in its own virtualenv under the corpus cache, then times, alternating,
several repetitions of each tool and reports medians of wall time, files/s and
peak RSS with the ratio to ruff: gradlint cold (``--no-cache``), gradlint warm
(with its cache, primed first) and ``ruff check --select ALL`` on the whole
corpus; fixit, torchfix, ruff and gradlint cold on a fixed, deterministic subset
of files, whose list is written to the cache.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import hashlib
import os
import platform
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import corpus
from common import REPO, RunResult, gradlint_argv, gradlint_env, help_text, run_measured, supports
from results import keeping_sections

RESULTS = Path(__file__).resolve().with_name("RESULTS.md")
DEFAULT_REPS = 3
DEFAULT_SUBSET = 500
QUICK_SUBSET = 50
DEFAULT_TIMEOUT = 3600.0
NO_TORCH = "torch==0.0.0\n"
"""Constraint for the peers' installs: any dependency on torch makes pip fail
instead of downloading several GB."""


# --- peers in their own virtualenvs ----------------------------------------------------

@dataclass(frozen=True)
class Peer:
    """A pinned peer tool installed in its own virtualenv."""

    name: str
    requirements: tuple[str, ...]
    executable: str
    packages: tuple[str, ...]
    """Distributions whose versions are reported."""

    @property
    def version(self) -> str:
        return self.requirements[0].split("==")[1]


PEERS: dict[str, Peer] = {
    "ruff": Peer("ruff", ("ruff==0.17.6",), "ruff", ("ruff",)),
    "fixit": Peer("fixit", ("fixit==2.2.1", "libcst==1.9.0"), "fixit", ("fixit", "libcst")),
    # torchfix 0.7.0 requires libcst>=1.5,<1.6: hence a venv of its own.
    "torchfix": Peer("torchfix", ("torchfix==0.7.0", "libcst==1.5.1"), "torchfix",
                     ("torchfix", "libcst", "flake8")),
}


def venv_dir(peer: Peer) -> Path:
    """Where the virtualenv of ``peer`` lives (under the corpus cache)."""
    return corpus.cache_dir() / "venvs" / f"{peer.name}-{peer.version}"


def peer_exe(peer: Peer) -> Path:
    """The peer's command inside its virtualenv."""
    return venv_dir(peer) / "bin" / peer.executable


def ensure_peer(peer: Peer) -> Path:
    """Create the peer's virtualenv and install its pinned requirements, once."""
    root = venv_dir(peer)
    marker = root / ".gradlint-bench-installed"
    wanted = "\n".join(peer.requirements)
    if marker.exists() and marker.read_text() == wanted and peer_exe(peer).exists():
        return peer_exe(peer)
    shutil.rmtree(root, ignore_errors=True)
    print(f"bench: installing {', '.join(peer.requirements)} into {root}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    constraints = root / "constraints.txt"
    constraints.write_text(NO_TORCH)
    proc = subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", "-c", str(constraints),
                           *peer.requirements], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"installing {peer.name} failed:\n{proc.stderr.strip()}")
    marker.write_text(wanted)
    return peer_exe(peer)


def peer_versions(peer: Peer) -> str:
    """``name==version`` of the reported distributions installed in the peer's venv."""
    proc = subprocess.run([str(venv_dir(peer) / "bin" / "python"), "-m", "pip", "list",
                           "--format", "freeze", "--disable-pip-version-check"],
                          capture_output=True, text=True)
    wanted = {p.lower() for p in peer.packages}
    lines = [ln for ln in proc.stdout.splitlines() if ln.split("==")[0].lower() in wanted]
    return ", ".join(sorted(lines, key=str.lower))


# --- the corpus and its subset ---------------------------------------------------------

def subset(files: Sequence[Path], size: int, root: Path) -> list[Path]:
    """A deterministic pseudo-random subset: the ``size`` files with the smallest
    SHA-1 of their path relative to ``root`` (stable across machines)."""
    def key(p: Path) -> str:
        return hashlib.sha1(p.relative_to(root).as_posix().encode()).hexdigest()
    return sorted(sorted(files, key=key)[:size])


def write_list(files: Sequence[Path], path: Path) -> Path:
    """Write one path per line (for re-running a tool by hand on the same files)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{f}\n" for f in files))
    return path


def warm_page_cache(files: Sequence[Path]) -> None:
    """Read every file once so the first timed tool doesn't pay for the disk."""
    for f in files:
        f.read_bytes()


# --- tools to time ---------------------------------------------------------------------

@dataclass
class Tool:
    """One timed command: a label, its argv, what it runs on, how many files."""

    label: str
    argv: list[str]
    scope: str
    """``corpus`` or ``subset``: ratios are to ruff on the same scope."""
    files: int
    env: dict[str, str] | None = None
    ok_codes: tuple[int, ...] = (0, 1)
    runs: list[RunResult] = field(default_factory=list)
    note: str = ""

    @property
    def ok_runs(self) -> list[RunResult]:
        return [r for r in self.runs if self.succeeded(r)]

    def succeeded(self, run: RunResult) -> bool:
        return (run.returncode in self.ok_codes and not run.timed_out
                and "Traceback (most recent call last)" not in run.stderr)

    def median_wall(self) -> float | None:
        ok = self.ok_runs
        return statistics.median(r.wall for r in ok) if ok else None

    def median_rss(self) -> float | None:
        ok = self.ok_runs
        return statistics.median(r.maxrss_mib for r in ok) if ok else None


@dataclass(frozen=True)
class Gradlint:
    """The gradlint command and what its CLI supports."""

    argv: list[str]
    check_help: str
    top_help: str

    @property
    def available(self) -> bool:
        return bool(self.check_help)

    @property
    def has_cache(self) -> bool:
        return supports(self.check_help, "--no-cache")

    def check(self, paths: Sequence[str], *, cache: bool) -> list[str]:
        argv = [*self.argv, "check", *paths, "--format", "json"]
        if not cache and self.has_cache:
            argv.append("--no-cache")
        if supports(self.check_help, "--exit-zero"):
            argv.append("--exit-zero")
        return argv

    def clean(self) -> list[str] | None:
        has_clean = "clean" in self.top_help.split()
        return [*self.argv, "clean"] if has_clean else None


def probe_gradlint(spec: str | None) -> Gradlint:
    """Find out what the gradlint CLI offers (``check --help``, ``--help``)."""
    argv = gradlint_argv(spec)
    env = gradlint_env()
    return Gradlint(argv, help_text([*argv, "check"], env), help_text(argv, env))


def ruff_argv(paths: Sequence[str]) -> list[str]:
    """``ruff check --select ALL`` without cache or configuration files."""
    return [str(peer_exe(PEERS["ruff"])), "check", "--isolated", "--select", "ALL",
            "--no-cache", "--quiet", "--exit-zero", *paths]


def build_tools(gl: Gradlint, names: set[str], dirs: list[str], n_corpus: int,
                sub: list[str]) -> list[Tool]:
    """The timed commands, in the order they alternate."""
    genv = gradlint_env()
    n_sub = len(sub)
    makers: dict[str, Callable[[], Tool]] = {
        "gradlint-cold": lambda: Tool("gradlint cold", gl.check(dirs, cache=False),
                                      "corpus", n_corpus, genv),
        "gradlint-warm": lambda: Tool("gradlint warm", gl.check(dirs, cache=True),
                                      "corpus", n_corpus, genv),
        "ruff": lambda: Tool("ruff --select ALL", ruff_argv(dirs), "corpus", n_corpus,
                             ok_codes=(0,)),
        "ruff-subset": lambda: Tool("ruff --select ALL", ruff_argv(sub), "subset", n_sub,
                                    ok_codes=(0,)),
        "gradlint-subset": lambda: Tool("gradlint cold", gl.check(sub, cache=False),
                                        "subset", n_sub, genv),
        "fixit": lambda: Tool("fixit lint", [str(peer_exe(PEERS["fixit"])), "lint", *sub],
                              "subset", n_sub),
        "torchfix": lambda: Tool("torchfix --select ALL",
                                 [str(peer_exe(PEERS["torchfix"])), "--select", "ALL", *sub],
                                 "subset", n_sub),
    }
    tools = []
    for key, make in makers.items():
        if key not in names:
            continue
        if key.startswith("gradlint") and not gl.available:
            print(f"bench: skipping {key}: `{' '.join(gl.argv)} check --help` failed",
                  file=sys.stderr)
            continue
        if key == "gradlint-warm" and not gl.has_cache:
            print("bench: skipping gradlint-warm: `check` has no --no-cache (no cache yet)",
                  file=sys.stderr)
            continue
        tools.append(make())
    return tools


PEER_TOOLS: dict[str, set[str]] = {
    "ruff": {"ruff", "ruff-subset"}, "fixit": {"fixit"}, "torchfix": {"torchfix"},
}
"""Which timed tools need which peer installed."""

TOOL_KEYS = ("gradlint-cold", "gradlint-warm", "ruff", "ruff-subset", "gradlint-subset",
             "fixit", "torchfix")


# --- timing ----------------------------------------------------------------------------

def compile_checkout() -> None:
    """Compile this checkout's gradlint to bytecode, as ``pip install`` does: an interpreter
    told not to write bytecode (``PYTHONDONTWRITEBYTECODE``) would otherwise compile every
    module of gradlint again in every timed run (about 0.05 s of a warm run), which no
    installed gradlint does. Stale bytecode is rewritten; none of it is committed."""
    compileall.compile_dir(REPO / "gradlint", quiet=1)


def prime_cache(gl: Gradlint, tools: Sequence[Tool], workdir: Path, timeout: float) -> None:
    """Empty gradlint's cache, then fill it with one untimed run for the warm runs."""
    warm = [t for t in tools if t.label == "gradlint warm"]
    if not warm:
        return
    clean = gl.clean()
    if clean:
        subprocess.run(clean, cwd=workdir, env=gradlint_env(), capture_output=True)
    shutil.rmtree(workdir / ".gradlint_cache", ignore_errors=True)
    result = run_measured(warm[0].argv, cwd=workdir, env=warm[0].env, timeout=timeout)
    print(f"  prime gradlint cache: {result.wall:.2f}s (exit {result.returncode})",
          file=sys.stderr, flush=True)


def time_all(tools: Sequence[Tool], reps: int, workdir: Path, timeout: float) -> None:
    """Run every tool once per repetition, alternating, recording each run."""
    for rep in range(1, reps + 1):
        for tool in tools:
            run = run_measured(tool.argv, cwd=workdir, env=tool.env, timeout=timeout)
            tool.runs.append(run)
            flag = "" if tool.succeeded(run) else f"  FAILED (exit {run.returncode})"
            print(f"  rep {rep}/{reps} {tool.label:18} {tool.scope:6} {run.wall:8.2f}s "
                  f"{run.maxrss_mib:7.0f} MiB{flag}", file=sys.stderr, flush=True)
            if not tool.succeeded(run):
                tail = "\n".join(run.stderr.strip().splitlines()[-10:])
                print(f"    stderr: {tail}", file=sys.stderr)


# --- reporting -------------------------------------------------------------------------

def _fmt(value: float | None, spec: str) -> str:
    return "failed" if value is None else format(value, spec)


def ratio(tool: Tool, tools: Sequence[Tool]) -> float | None:
    """Median wall of ``tool`` over ruff's on the same scope."""
    ruff = next((t for t in tools if t.label.startswith("ruff") and t.scope == tool.scope),
                None)
    mine, base = tool.median_wall(), ruff.median_wall() if ruff else None
    return mine / base if mine is not None and base else None


def results_table(tools: Sequence[Tool]) -> list[str]:
    """The Markdown table of medians."""
    lines = ["| tool | scope | files | median wall s | files/s | peak MiB | ratio to ruff |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for t in tools:
        wall = t.median_wall()
        rate = t.files / wall if wall else None
        r = ratio(t, tools)
        lines.append(f"| {t.label} | {t.scope} | {t.files} | {_fmt(wall, '.2f')} "
                     f"| {_fmt(rate, '.0f')} | {_fmt(t.median_rss(), '.0f')} "
                     f"| {_fmt(r, '.3f')}x |")
    return lines


def _find(tools: Sequence[Tool], prefix: str, scope: str) -> Tool | None:
    return next((t for t in tools if t.label.startswith(prefix) and t.scope == scope), None)


def _target(text: str, value: float | None, ok: Callable[[float], bool]) -> str:
    if value is None:
        return f"- {text}: not measured"
    return f"- {text}: {value:.3f}x, {'met' if ok(value) else 'NOT met'}"


COLD_TARGET = 0.5
WARM_TARGET = 0.04
"""Issue 12's targets: wall time of a cold (``--no-cache``) and a warm audit over ruff's."""


def targets(tools: Sequence[Tool]) -> list[str]:
    """Issue 12's targets against the measured medians (the language server's re-lint target is
    measured by ``benchmarks/lsp_relint.py``), then issue 7's against fixit and torchfix."""
    cold, warm = _find(tools, "gradlint cold", "corpus"), _find(tools, "gradlint warm", "corpus")
    lines = [
        _target(f"gradlint cold <= {COLD_TARGET}x ruff", ratio(cold, tools) if cold else None,
                lambda v: v <= COLD_TARGET),
        _target(f"gradlint warm <= {WARM_TARGET}x ruff", ratio(warm, tools) if warm else None,
                lambda v: v <= WARM_TARGET),
    ]
    for tool in (cold, warm):
        rss = tool.median_rss() if tool else None
        if tool is not None and rss is not None:  # the largest single process: the main one or a worker
            lines.append(f"- peak memory per process, {tool.label}: {rss:.0f} MiB (reported, no bound set)")
    lines.append("- language server re-lint of a 2,000-line file < 100 ms median: "
                 "`python benchmarks/lsp_relint.py`")
    mine = _find(tools, "gradlint cold", "subset")
    for peer in ("fixit", "torchfix"):
        other = _find(tools, peer, "subset")
        a = other.median_wall() if other else None
        b = mine.median_wall() if mine else None
        lines.append(_target(f"{peer} / gradlint cold on the subset >= 100x (issue 7)",
                             a / b if a is not None and b else None, lambda v: v >= 100))
    return lines


def runs_table(tools: Sequence[Tool]) -> list[str]:
    """Every individual run, for judging the spread."""
    lines = ["| tool | scope | wall s per run | exit codes |", "| --- | --- | --- | --- |"]
    for t in tools:
        walls = ", ".join(f"{r.wall:.2f}" for r in t.runs)
        codes = ", ".join(str(r.returncode) for r in t.runs)
        lines.append(f"| {t.label} | {t.scope} | {walls} | {codes} |")
    return lines


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_total_gib() -> float | None:
    """Total memory from /proc/meminfo, in GiB."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def _git(*args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def gradlint_version(gl: Gradlint) -> str:
    """gradlint's ``--version`` or, failing that, the version in pyproject.toml."""
    proc = subprocess.run([*gl.argv, "--version"], capture_output=True, text=True,
                          env=gradlint_env())
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.strip().splitlines()[0]
    for line in (REPO / "pyproject.toml").read_text().splitlines():
        if line.startswith("version"):
            return line.split("=", 1)[1].strip().strip('"') + " (pyproject.toml)"
    return "unknown"


def machine_lines(gl: Gradlint, peers: Sequence[Peer]) -> list[str]:
    """The machine and software description."""
    mem = mem_total_gib()
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    commit = _git("rev-parse", "--short", "HEAD") or "no commit"
    dirty = " (with uncommitted changes)" if _git("status", "--porcelain") else ""
    lines = [
        f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- CPU: {cpu_model()}, {os.cpu_count()} logical cores"
        + (f" ({affinity} usable)" if affinity else ""),
        f"- memory: {mem:.1f} GiB" if mem else "- memory: unknown",
        f"- OS: {platform.platform()}",
        f"- Python: {platform.python_version()} ({sys.executable})",
        f"- gradlint: {gradlint_version(gl)}, commit {commit}{dirty}, "
        f"command `{' '.join(gl.argv)}`",
    ]
    lines += [f"- {p.name} venv: {peer_versions(p)}" for p in peers]
    return lines


def render(tools: Sequence[Tool], gl: Gradlint, peers: Sequence[Peer], corp: Corpus,
           reps: int, quick: bool, compiled: bool = False) -> str:
    """The whole RESULTS.md text."""
    title = "gradlint benchmark" + (" (quick smoke run)" if quick else "")
    parts = [
        f"# {title}", "",
        "Produced by `python benchmarks/bench.py`"
        + (" --quick" if quick else "") + f": {reps} alternating repetition(s), medians. "
        "Peak MiB is the largest single process's RSS (`wait4` ru_maxrss). Ratios are to "
        "ruff on the same scope: the whole corpus, or the subset for fixit and torchfix."
        + (" The checkout's gradlint is compiled to bytecode first, as `pip install` does."
           if compiled else ""),
        "", "## Results", "", *results_table(tools), "",
        "Targets of issue 12:", "", *targets(tools), "",
        "## Machine", "", *machine_lines(gl, peers), "",
        "## Corpus", "", corpus.stats_table(corp.packages), "",
        f"Subset: {len(corp.subset)} files ({corp.subset_mb:.1f} MB), the smallest SHA-1 "
        f"of the path within the cache's `src/`; list in `{corp.subset_list}`.", "",
        "## Commands", "",
        *[f"- {t.label} ({t.scope}): `{_short(t.argv)}`" for t in tools], "",
        "## Every run", "", *runs_table(tools), "",
    ]
    return "\n".join(parts)


def _short(argv: Sequence[str], limit: int = 6) -> str:
    """An argv for display: the interpreter as ``python``, peers by name, corpus
    paths by their last component and long path lists elided."""
    cache, src = str(corpus.cache_dir()), str(corpus.cache_dir() / "src")
    exe = argv[0]
    if exe == sys.executable:
        exe = "python"
    elif exe.startswith(cache):
        exe = Path(exe).name
    paths = [a for a in argv[1:] if a.startswith(src)]
    others = [a for a in argv[1:] if not a.startswith(src)]
    shown = ([f"<{len(paths)} files of the subset list>"] if len(paths) > limit
             else [Path(p).name for p in paths])
    return " ".join([exe, *others, *shown])


# --- command line ----------------------------------------------------------------------

def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: corpus {corpus.QUICK_NAMES}, 1 repetition, "
                             f"{QUICK_SUBSET}-file subset, results in the cache")
    parser.add_argument("--reps", type=int, default=None,
                        help=f"repetitions (default {DEFAULT_REPS}, 1 with --quick)")
    parser.add_argument("--subset", type=int, default=None,
                        help=f"subset size for fixit/torchfix (default {DEFAULT_SUBSET})")
    parser.add_argument("--gradlint", default=None, metavar="CMD",
                        help="the gradlint command (default: 'python -m gradlint', "
                             "'python' meaning this interpreter)")
    parser.add_argument("--tools", default=",".join(TOOL_KEYS),
                        help=f"comma-separated subset of {','.join(TOOL_KEYS)}")
    parser.add_argument("--output", type=Path, default=None,
                        help="where to write the Markdown results (default "
                             "benchmarks/RESULTS.md, or the cache with --quick)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds before one run is killed")
    return parser.parse_args(argv)


@dataclass(frozen=True)
class Corpus:
    """The fetched benchmark corpus and its subset."""

    packages: list[corpus.Package]
    dirs: list[Path]
    files: list[Path]
    subset: list[Path]
    subset_list: Path

    @property
    def subset_mb(self) -> float:
        return sum(f.stat().st_size for f in self.subset) / 1e6


def prepare_corpus(quick: bool, size: int) -> Corpus:
    """Fetch the (quick or full) benchmark corpus and write its subset list."""
    pkgs = corpus.select(corpus.QUICK_NAMES if quick else corpus.BENCH_NAMES)
    dirs = corpus.ensure([p.name for p in pkgs])
    files = corpus.python_files(dirs)
    sub = subset(files, size, corpus.cache_dir() / "src")
    name = f"subset-{'quick' if quick else 'bench'}-{size}.txt"
    return Corpus(pkgs, dirs, files, sub, write_list(sub, corpus.cache_dir() / "bench" / name))


def main(argv: Sequence[str] | None = None) -> int:
    """Fetch, install, time, report."""
    args = _parse_args(argv)
    names = set(args.tools.split(","))
    if names - set(TOOL_KEYS):
        print(f"bench: unknown tools {sorted(names - set(TOOL_KEYS))}", file=sys.stderr)
        return 2
    reps = args.reps or (1 if args.quick else DEFAULT_REPS)
    corp = prepare_corpus(args.quick, args.subset or (QUICK_SUBSET if args.quick
                                                      else DEFAULT_SUBSET))
    peers = [PEERS[n] for n, keys in PEER_TOOLS.items() if names & keys]
    for peer in peers:
        ensure_peer(peer)
    gl = probe_gradlint(args.gradlint)
    if args.gradlint is None:
        compile_checkout()
    tools = build_tools(gl, names, [str(d) for d in corp.dirs], len(corp.files),
                        [str(f) for f in corp.subset])
    if not tools:
        print("bench: nothing to time", file=sys.stderr)
        return 1
    workdir = corpus.cache_dir() / "bench" / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    warm_page_cache(corp.files)
    print(f"bench: {len(corp.files)} files in {len(corp.dirs)} packages, subset "
          f"{len(corp.subset)}, {reps} reps", file=sys.stderr)
    prime_cache(gl, tools, workdir, args.timeout)
    time_all(tools, reps, workdir, args.timeout)
    print("\n".join([*results_table(tools), "", *targets(tools)]))
    default = workdir.parent / "RESULTS-quick.md" if args.quick else RESULTS
    output = args.output or default
    text = render(tools, gl, peers, corp, reps, args.quick, compiled=args.gradlint is None)
    old = output.read_text(encoding="utf-8") if output.exists() else ""
    output.write_text(keeping_sections(text, old))
    print(f"\nwrote {output}", file=sys.stderr)
    return 0 if all(t.ok_runs for t in tools) else 1


if __name__ == "__main__":
    sys.exit(main())
