"""The command line: ``gradlint check``."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TextIO

import click

from gradlint import __version__
from gradlint.budget import DEFAULT_TIMEOUT
from gradlint.cache import Cache, CacheError, default_cache_dir
from gradlint.cache import clean as clean_cache
from gradlint.catalogue import CATALOGUE
from gradlint.config import (
    TARGET_VERSIONS,
    Config,
    ConfigResolver,
    Overrides,
    check_overrides,
    files_settings,
    parse_override,
    parse_per_file_ignore,
    parse_target_version,
    settings_for,
)
from gradlint.diagnostics import Diagnostic
from gradlint.discovery import discover
from gradlint.exclusion import PathFilter
from gradlint.paths import is_folder
from gradlint.reporters import DEFAULT_FORMAT, FORMATS, Report, ReportOptions, render
from gradlint.reporters.model import shown_path
from gradlint.reporters.progress import progress_wanted
from gradlint.runner import DEFAULT_MAX_FILE_SIZE, Mode, Piped, Progress, RunResult, default_jobs, display_path, run
from gradlint.settings import Settings, SettingsError
from gradlint.show_settings import describe_settings

# What only some commands and options need (the fixer, the analysis, rich, the rule documents)
# is imported where it is used: a ``check`` that the cache answers loads none of it.


def _codes(value: str | None) -> tuple[str, ...] | None:
    return tuple(c.strip() for c in value.split(",") if c.strip()) if value is not None else None


def use_color(choice: str, stream: TextIO) -> bool:
    """``--color``: always / never, else NO_COLOR and FORCE_COLOR, else only on a terminal."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


class Failure(Exception):
    """A run that cannot go on: one clear line on stderr, exit status 2."""


def say(kind: str, message: str) -> None:
    """One line on stderr, ``gradlint: KIND: MESSAGE``; control characters and undecodable
    bytes in the message (echoed user input: a path, an option value) are escaped, so it
    stays one line."""
    click.echo(f"gradlint: {kind}: {shown_path(message)}", err=True)


def fail(message: str) -> NoReturn:
    """Stop the command with ``message`` (see :class:`Failure`)."""
    raise Failure(message)


def _exits(command: Callable[..., int | None]) -> Callable[..., None]:
    """The one exit of every command: the status it returns (None: 0), 2 after the
    one-line message of a :class:`Failure`, 130 after Ctrl-C (one line)."""

    @functools.wraps(command)
    def run_command(*args: object, **kwargs: object) -> None:
        try:
            status = command(*args, **kwargs) or 0
        except Failure as exc:
            say("error", str(exc))
            status = 2
        except KeyboardInterrupt:
            interrupted()
        sys.exit(status)

    return run_command


@dataclass(frozen=True)
class _Output:
    """Where and how a command reports: the format, the file (None: stdout), the report
    options, the colour choice, and whether findings still exit 0."""

    format: str
    file: Path | None
    options: ReportOptions
    color: str
    exit_zero: bool

    def status(self, problems: bool) -> int:
        """The exit status of a run that found (or left) ``problems``."""
        return 0 if self.exit_zero or not problems else 1


class _Interrupted(Exception):
    """Ctrl-C while click parses the command line (click would print a blank line first)."""


class _Group(click.Group):
    """The ``gradlint`` group: a usage error is one line on stderr (exit status 2), Ctrl-C
    exit status 130."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted from None

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            status = super().main(*args, **kwargs)
        except (click.exceptions.Abort, _Interrupted):
            interrupted()
        except click.ClickException as exc:
            say("error", exc.format_message())
            sys.exit(exc.exit_code)
        sys.exit(status if isinstance(status, int) else 0)


def interrupted() -> NoReturn:
    """Ctrl-C: one line, exit status 130. The process ends at once (``os._exit``): the pool's
    workers are already stopped, and an interpreter shutting down after an interrupt may
    still die of the signal itself (status -2) instead of the status asked for."""
    click.echo("gradlint: interrupted", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="gradlint", message="%(prog)s %(version)s")
def main() -> None:
    """gradlint: find gradient-accumulation, clipping and scheduler bugs in PyTorch training loops."""


@main.command()
def version() -> None:
    """Print gradlint's version."""
    click.echo(f"gradlint {__version__}")


_FORMAT_HELP = ("Output format: full (each finding with its source, explanation and fix), concise (one line each, [*] on "
                "fixable ones), text (one line each, no marks: stable for scripts), json, json-lines, sarif, "
                "github, gitlab, junit.")


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "--output-format", "output_format", type=click.Choice(list(FORMATS)),
              default=DEFAULT_FORMAT, show_default=True, envvar="GRADLINT_OUTPUT_FORMAT", help=_FORMAT_HELP)
@click.option("--select", envvar="GRADLINT_SELECT",
              help="Comma-separated rule codes or prefixes to enable instead of the configured ones.")
@click.option("--ignore", envvar="GRADLINT_IGNORE", help="Comma-separated rule codes or prefixes to disable.")
@click.option("--extend-select", envvar="GRADLINT_EXTEND_SELECT",
              help="Comma-separated rule codes or prefixes to enable as well.")
@click.option("--per-file-ignores", "per_file_ignores", multiple=True, metavar="GLOB:CODES",
              help="Ignore CODES (comma-separated) in files matching GLOB, replacing the configured "
                   "per-file-ignores (repeatable; GLOB relative to the configuration's folder).")
@click.option("--exclude", envvar="GRADLINT_EXCLUDE",
              help="Comma-separated gitignore-style patterns replacing the default excludes.")
@click.option("--extend-exclude", envvar="GRADLINT_EXTEND_EXCLUDE",
              help="Comma-separated gitignore-style patterns to exclude as well.")
@click.option("--force-exclude/--no-force-exclude", default=None,
              help="Apply excludes to files named on the command line too (for pre-commit).")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None,
              help="Skip files that .gitignore files ignore (default: on).")
@click.option("--config", "config_args", multiple=True, metavar="PATH | KEY=VALUE", envvar="GRADLINT_CONFIG",
              help="A configuration file to use for every file, or a TOML KEY=VALUE (e.g. 'select = [\"GL1\"]') "
                   "set in every configuration, over what the files say (repeatable).")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@click.option("--target-version", type=click.Choice(TARGET_VERSIONS), envvar="GRADLINT_TARGET_VERSION",
              help="The Python the code is written for: on an older Python, a file only that version can "
                   "parse is left unanalysed instead of reported as GL000.")
@click.option("--ignore-noqa", is_flag=True, help="Report findings even where a suppression comment says not to.")
@click.option("--stdin-filename", help="With PATH '-': the name of the file read from stdin.")
@click.option("--add-noqa", is_flag=True, help="Add a '# noqa: CODE' comment for every current finding.")
@click.option("-o", "--output-file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report to this file instead of stdout.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of each finding.")
@click.option("--show-files", is_flag=True, help="List the files that would be checked, and stop.")
@click.option("--show-settings", is_flag=True,
              help="Print the settings the first file would be checked with and the file they come from, and stop.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only (no summary line, no progress).")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour the output (auto: only on a terminal, honouring NO_COLOR / FORCE_COLOR).")
@click.option("--fix", is_flag=True, help="Apply the safe fixes in place, then report what remains.")
@click.option("--fix-only", is_flag=True,
              help="Apply the safe fixes in place and say how many; report nothing else (exit 0).")
@click.option("--unsafe-fixes", is_flag=True, envvar="GRADLINT_UNSAFE_FIXES",
              help="Also apply (with --fix or --diff) the fixes that rest on an assumption.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff and write nothing; exit 1 if there are any.")
@click.option("--show-fixes", is_flag=True, help="List the problems fixed, per file and rule (--diff always lists them).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when problems are found.")
@click.option("--exit-non-zero-on-fix", is_flag=True,
              help="With --fix or --fix-only, exit 1 when a file was fixed, even if nothing remains.")
@click.option("--watch", is_flag=True, help="Check again whenever a file under PATHS changes (Ctrl-C stops).")
@click.option("--watch-interval", "watch_interval", type=float, default=0.5, hidden=True)
@click.option("--no-cache", is_flag=True, envvar="GRADLINT_NO_CACHE",
              help="Do not read or write the result cache.")
@click.option("--cache-dir", type=click.Path(path_type=Path),
              help="The result cache folder (default: $GRADLINT_CACHE_DIR, else .gradlint_cache at the project root).")
@click.option("-j", "--jobs", "jobs_text", metavar="N", envvar="GRADLINT_JOBS",
              help="Worker processes (default: the number of CPUs; 1: no pool).")
@click.option("--max-file-size", "max_size_text", metavar="BYTES",
              help=f"Skip files larger than this, with a notice (default: the max-file-size setting, "
                   f"else {DEFAULT_MAX_FILE_SIZE}; 0: no limit).")
@click.option("--timeout", "timeout_text", metavar="SECONDS",
              help=f"Give up on a file whose analysis takes more CPU time than this, with a notice "
                   f"(default: {DEFAULT_TIMEOUT}; 0: no limit).")
@_exits
def check(paths: tuple[Path, ...], output_format: str, select: str | None, ignore: str | None,
          extend_select: str | None, per_file_ignores: tuple[str, ...], exclude: str | None,
          extend_exclude: str | None, force_exclude: bool | None, respect_gitignore: bool | None,
          config_args: tuple[str, ...], isolated: bool, target_version: str | None, ignore_noqa: bool,
          stdin_filename: str | None, add_noqa: bool, output_file: Path | None, statistics: bool,
          show_files: bool, show_settings: bool, quiet: bool, color: str, fix: bool, fix_only: bool,
          unsafe_fixes: bool, diff: bool, show_fixes: bool, exit_zero: bool, exit_non_zero_on_fix: bool,
          watch: bool, watch_interval: float, no_cache: bool, cache_dir: Path | None, jobs_text: str | None,
          max_size_text: str | None, timeout_text: str | None) -> int:
    """Check PATHS (files or folders; default: the current folder; '-': stdin).

    The main options also come from GRADLINT_* environment variables: GRADLINT_OUTPUT_FORMAT,
    GRADLINT_SELECT, GRADLINT_IGNORE, GRADLINT_EXTEND_SELECT, GRADLINT_EXCLUDE,
    GRADLINT_EXTEND_EXCLUDE, GRADLINT_CONFIG (a file), GRADLINT_TARGET_VERSION, GRADLINT_UNSAFE_FIXES,
    GRADLINT_NO_CACHE, GRADLINT_JOBS (and GRADLINT_CACHE_DIR for the cache folder).
    """
    jobs = _whole_number("--jobs", jobs_text, minimum=1) if jobs_text is not None else default_jobs()
    max_size = _whole_number("--max-file-size", max_size_text, minimum=0) if max_size_text is not None else None
    timeout = _whole_number("--timeout", timeout_text, minimum=0) if timeout_text is not None else DEFAULT_TIMEOUT
    if watch and watch_interval <= 0:
        fail("--watch-interval expects a number of seconds > 0")
    fix = fix or fix_only
    cache = None if no_cache else _cache(cache_dir)
    try:
        config_path, values = _config_args(config_args)
        if per_file_ignores:
            values += (("per_file_ignores", tuple(parse_per_file_ignore(item) for item in per_file_ignores)),)
        overrides = Overrides(select=_codes(select), ignore=_codes(ignore) or (),
                              extend_select=_codes(extend_select) or (), exclude=_codes(exclude),
                              extend_exclude=_codes(extend_exclude) or (), respect_gitignore=respect_gitignore,
                              force_exclude=force_exclude, ignore_noqa=ignore_noqa,
                              target_version=parse_target_version(target_version, "--target-version")
                              if target_version else None)
        check_overrides(overrides)
        ConfigResolver(config=config_path, isolated=isolated, values=values)  # a missing --config file fails now
    except SettingsError as exc:
        fail(str(exc))
    output = _Output(output_format, output_file, ReportOptions(quiet=quiet, statistics=statistics,
                                                               unsafe_fixes=unsafe_fixes), color, exit_zero)
    job = _CheckJob(list(paths), overrides, config_path, isolated, values, output, cache, jobs, max_size, timeout)
    if paths == (Path("-"),) or (not paths and stdin_filename):
        if diff:
            fail("--diff does not read stdin; use --fix to print the fixed text")
        if watch:
            fail("--watch does not read stdin")
        return job.stdin(stdin_filename, fix)
    if show_files or show_settings:
        return job.show(show_settings)
    mode = Mode.DIFF if diff else Mode.FIX if fix else Mode.CHECK
    fixing = _Fixing(mode, unsafe_fixes, show_fixes, fix_only, exit_non_zero_on_fix)
    if watch:
        return _watch(lambda: job.files(fixing, add_noqa), job, watch_interval)
    return job.files(fixing, add_noqa)


@dataclass(frozen=True)
class _Fixing:
    """What a run does about fixes: its mode and the fix options."""

    mode: Mode
    unsafe: bool
    show_fixes: bool
    fix_only: bool
    exit_non_zero_on_fix: bool


@dataclass
class _CheckJob:
    """One ``gradlint check`` invocation: what to check and how, run once or (``--watch``) again."""

    paths: list[Path]
    overrides: Overrides
    config_path: Path | None
    isolated: bool
    values: tuple[tuple[str, Any], ...]
    output: _Output
    cache: Cache | None
    jobs: int
    max_size: int | None
    timeout: int

    def resolver(self) -> ConfigResolver:
        """A fresh resolver (a watched run sees edited configuration files)."""
        return ConfigResolver(config=self.config_path, isolated=self.isolated, values=self.values)

    def discover(self, resolver: ConfigResolver, warn: bool = True) -> list[Path]:
        """The files to check; with ``warn``, a warning for each folder that yields none."""
        targets = self.paths or [Path(".")]
        skipped: list[str] = []
        files = discover(targets, PathFilter(resolver, self.overrides), skipped)
        if warn:
            for line in skipped:
                say("warning", line)
            cwd = os.getcwd()  # os.path.abspath without asking for it once per file
            found = [os.path.normpath(os.path.join(cwd, f)) for f in files]
            for target in targets:
                if not is_folder(target):
                    continue
                prefix = os.path.join(os.path.normpath(os.path.abspath(target)), "")
                explained = any(line.startswith(f"{target}: ") for line in skipped)  # excluded, said already
                if not explained and not any(f.startswith(prefix) for f in found):
                    say("warning", f"No Python files found under {target}")
        return files

    def show(self, show_settings: bool) -> int:
        """``--show-files`` (the files, one a line) or ``--show-settings`` (the first file's)."""
        try:
            resolver = self.resolver()
            files = self.discover(resolver)
            if not show_settings:
                for path in files:
                    click.echo(display_path(path))
                return 0
            if not files:
                fail("--show-settings: no file to show the settings of")
            click.echo(describe_settings(files[0], resolver, self.overrides), nl=False)
        except SettingsError as exc:
            fail(str(exc))
        return 0

    def files(self, fixing: _Fixing, add_noqa: bool) -> int:
        """Check (or fix) the files under the paths once; the exit status."""
        try:
            resolver = self.resolver()
            files = self.discover(resolver)
            configs = resolver.for_files(files)
            settings = files_settings(configs, self.overrides)
            limits = self.max_size if self.max_size is not None else {path: _configured_limit(cfg)
                                                                      for path, cfg in configs.items()}
        except SettingsError as exc:
            fail(str(exc))
        with _progress(self.output.options.quiet) as progress:
            result = run(files, settings, jobs=self.jobs, cache=self.cache, max_file_size=limits,
                         timeout=self.timeout, mode=fixing.mode, unsafe=fixing.unsafe, progress=progress)
        if fixing.mode is not Mode.CHECK:
            return _report_fixes(result, fixing, self.output)
        _notify_skipped(result, self.timeout)
        if add_noqa:
            return _add_noqa(files, result.diagnostics)
        _emit(Report(result.diagnostics, result.files_checked), self.output)
        return self.output.status(bool(result.diagnostics))

    def stdin(self, stdin_filename: str | None, fix: bool) -> int:
        """Check (with ``fix``: fix) the text on stdin."""
        try:
            return _check_stdin(stdin_filename, self.resolver(), self.overrides, self.output, self.cache,
                                self.max_size, self.timeout, fix)
        except SettingsError as exc:
            fail(str(exc))


def _config_args(args: tuple[str, ...]) -> tuple[Path | None, tuple[tuple[str, Any], ...]]:
    """``--config`` values: at most one configuration file, and the KEY=VALUE settings (a
    value with ``=`` that names no file)."""
    path: Path | None = None
    values: list[tuple[str, Any]] = []
    for arg in args:
        if "=" in arg and not Path(arg).is_file():
            values.append(parse_override(arg))
        elif path is not None:
            raise SettingsError("--config: give at most one configuration file (and any KEY=VALUE)")
        else:
            path = Path(arg)
    return path, tuple(values)


@contextmanager
def _progress(quiet: bool) -> Iterator[Progress | None]:
    """The progress hook of a run: a display on stderr when it is a terminal (see
    :func:`gradlint.reporters.progress.progress_wanted`), else None."""
    if not progress_wanted(sys.stderr, quiet, os.environ):
        yield None
        return
    from rich.console import Console

    from gradlint.reporters.progress import ProgressDisplay

    with ProgressDisplay(Console(file=sys.stderr)) as display:
        yield display


def _watch(once: Callable[[], int], job: _CheckJob, interval: float) -> int:
    """``--watch``: run ``once``, then again whenever a file to check appears, changes or goes
    (modification time and size, polled every ``interval`` seconds) until Ctrl-C."""
    click.echo("gradlint: watching for changes (Ctrl-C stops)", err=True)
    seen: dict[Path, tuple[int, int]] | None = None
    while True:
        try:
            current = _stamps(job.discover(job.resolver(), warn=seen is None))
        except SettingsError as exc:
            say("error", str(exc))
            current = seen or {}
        if current != seen:
            if seen is not None:
                click.echo("gradlint: change detected, checking again", err=True)
            try:
                once()
            except Failure as exc:
                say("error", str(exc))
            sys.stdout.flush()
            seen = current  # as before the run: an edit during it (or --fix's own) runs it again
        time.sleep(interval)


def _stamps(files: list[Path]) -> dict[Path, tuple[int, int]]:
    """Each file's modification time and size (a file that vanished is left out)."""
    stamps = {}
    for path in files:
        try:
            info = path.stat()
        except OSError:
            continue
        stamps[path] = (info.st_mtime_ns, info.st_size)
    return stamps


def _whole_number(option: str, text: str, minimum: int) -> int:
    """The value of a numeric option; anything else (or below ``minimum``) fails in one line."""
    try:
        value = int(text.strip())
    except ValueError:
        fail(f"{option} expects a whole number >= {minimum}, got {text!r}")
    if value < minimum:
        fail(f"{option} expects a whole number >= {minimum}, got {text!r}")
    return value


def _cache(cache_dir: Path | None) -> Cache:
    """The result cache in ``--cache-dir`` or its default folder. A file in the default
    folder's place only costs speed (the cache is best-effort); a named one is an error."""
    if cache_dir is not None and cache_dir.exists() and not cache_dir.is_dir():
        fail(f"the cache folder {cache_dir} is a file")
    return Cache(cache_dir or default_cache_dir())


def _size_limit(resolver: ConfigResolver, path: Path) -> int:
    """The ``max-file-size`` of the configuration governing ``path``, else the default."""
    return _configured_limit(resolver.for_path(path))


def _configured_limit(cfg: Config) -> int:
    """The ``max-file-size`` of ``cfg``, else the default."""
    return DEFAULT_MAX_FILE_SIZE if cfg.max_file_size is None else cfg.max_file_size


def _notify_skipped(result: RunResult, timeout: int, *, gave_up: bool = True) -> None:
    """One notice on stderr per file skipped for its size or (with ``gave_up``) given up for
    its analysis time (not a diagnostic)."""
    for skipped in result.skipped:
        say("notice", f"skipped {skipped.path}: {skipped.size} bytes is over the "
                      f"{skipped.limit}-byte limit (--max-file-size 0 checks it)")
    for path in result.timed_out if gave_up else ():
        say("notice", f"gave up on {path}: its analysis took more than {timeout} CPU seconds "
                      f"(--timeout 0 removes the limit)")


def _emit(report: Report, output: _Output, stream: TextIO | None = None) -> None:
    """Render ``report`` to ``--output-file`` or to ``stream`` (stdout by default)."""
    if output.file is None:
        stream = stream or sys.stdout
        render(report, output.format, stream, dataclasses.replace(output.options, color=use_color(output.color, stream)))
        return
    try:
        output.file.parent.mkdir(parents=True, exist_ok=True)
        with output.file.open("w", encoding="utf-8", newline="\n") as handle:
            render(report, output.format, handle, dataclasses.replace(output.options, color=output.color == "always"))
    except OSError as exc:
        fail(f"cannot write {output.file}: {exc.strerror or exc}")


def _report_fixes(result: RunResult, fixing: _Fixing, output: _Output) -> int:
    """``--fix`` (the fixes written: report what remains), ``--fix-only`` (say how many) or
    ``--diff`` (print them)."""
    from gradlint.fix_run import changed, fixed_count, problems, render_diff, render_fixes

    _notify_skipped(result, 0, gave_up=False)  # a file out of time is a "not fixed" warning
    for line in problems(result.fixes):
        say("warning", line)
    if fixing.mode is Mode.DIFF:
        render_diff(result.fixes, sys.stdout)
        render_fixes(result.fixes, sys.stderr, would=True)
        return output.status(bool(changed(result.fixes)))
    fixed = fixed_count(result.fixes)
    if fixing.show_fixes:
        render_fixes(result.fixes, sys.stdout)
    if fixing.fix_only:
        if not output.options.quiet and not fixing.show_fixes:
            noun = "problem" if fixed == 1 else "problems"
            click.echo(f"Fixed {fixed} {noun}." if fixed else "No problems fixed.", err=True)
        return output.status(fixing.exit_non_zero_on_fix and fixed > 0)
    _emit(Report(result.diagnostics, result.files_checked, fixed=fixed), output)
    return output.status(bool(result.diagnostics) or (fixing.exit_non_zero_on_fix and fixed > 0))


def _check_stdin(stdin_filename: str | None, resolver: ConfigResolver, overrides: Overrides, output: _Output,
                 cache: Cache | None, max_size: int | None, timeout: int, fix: bool) -> int:
    """Lint (with ``fix``: fix, writing the result to stdout) the text on stdin, through the
    runner like a file. An analysis over its ``timeout`` (CPU seconds) is a notice, the text
    written back as it is.

    Raises :class:`SettingsError` for a bad configuration.
    """
    from gradlint.stdin import fixed_output, report_text

    data = sys.stdin.buffer.read()
    name = Path(stdin_filename) if stdin_filename else Path.cwd() / "-"
    display = display_path(name) if stdin_filename else "-"
    if stdin_filename and PathFilter(resolver, overrides).explicitly_excluded(name):
        return _answer_stdin(data if fix else None, Report([], 0, {display: ""}), output)
    settings: Settings = settings_for(name, overrides=overrides, resolver=resolver)
    limit = max_size if max_size is not None else _size_limit(resolver, name)
    result = run([Piped(name, display, data)], settings, cache=cache, max_file_size=limit, timeout=timeout,
                 mode=Mode.FIX if fix else Mode.CHECK, unsafe=output.options.unsafe_fixes)
    _notify_skipped(result, timeout)  # a file out of time or over the limit is also a GL000
    outcome = result.fixes[0] if result.fixes else None
    text = report_text(data, name.suffix == ".ipynb", outcome)
    fixed = len(outcome.fixed) if outcome is not None else 0
    report = Report(result.diagnostics, result.files_checked, {display: text}, fixed=fixed)
    return _answer_stdin(fixed_output(data, outcome) if fix else None, report, output)


def _answer_stdin(fixed: bytes | None, report: Report, output: _Output) -> int:
    """Write the fixed bytes (if fixing) to stdout, then the report (to stderr after them)."""
    if fixed is not None:
        sys.stdout.buffer.write(fixed)
        sys.stdout.flush()
    _emit(report, output, sys.stderr if fixed is not None else None)
    return output.status(bool(report.diagnostics))


def _add_noqa(files: list[Path], diagnostics: list[Diagnostic]) -> int:
    """``--add-noqa``: suppress every finding in place, say how many; exit status 0 (2 if a file failed)."""
    from gradlint.add_noqa import add_noqa_file

    by_path: dict[str, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        by_path.setdefault(diagnostic.path, []).append(diagnostic)
    added = skipped = failed = 0
    for path in files:
        found = by_path.get(display_path(path))
        if not found:
            continue
        try:
            result = add_noqa_file(path, found)
        except OSError as exc:
            say("error", f"cannot add noqa to {display_path(path)}: {exc.strerror or exc}")
            failed += 1
            continue
        added += result.added
        skipped += result.skipped
    noun = "directive" if added == 1 else "directives"
    click.echo(f"Added {added} noqa {noun}.")
    if skipped:
        click.echo(f"{skipped} reported line(s) cannot carry a comment (inside a string or after a backslash).")
    return 2 if failed else 0


@main.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule: code, name, severity, fix.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@_exits
def rule(code: str | None, show_all: bool, output_format: str) -> None:
    """Explain rule CODE (its document: rendered on a terminal, Markdown when piped), or list
    every rule with --all."""
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.table import Table

    from gradlint.rule_docs import rule_record

    if show_all == (code is not None):
        fail("give one rule code (gradlint rule GL101) or --all")
    if show_all:
        records = [rule_record(info) for info in CATALOGUE.values()]
        if output_format == "json":
            click.echo(json.dumps(records, indent=2))
            return
        table = Table("code", "name", "severity", "fix", "default", box=None, pad_edge=False)
        for record in records:
            table.add_row(record["code"], record["name"], record["severity"], record["fix"],
                          "on" if record["default"] else "off")
        Console(highlight=False, soft_wrap=True).print(table)
        return
    info = CATALOGUE.get((code or "").strip().upper())
    if info is None:
        fail(f"unknown rule code {code!r} (gradlint rule --all lists them)")
    record = rule_record(info, with_doc=True)
    if output_format == "json":
        click.echo(json.dumps(record, indent=2))
    elif record["explanation"] is None:
        fail(f"the document of {info.code} is not installed")
    elif sys.stdout.isatty():
        Console(highlight=False).print(Markdown(record["explanation"]))
    else:  # piped: the Markdown itself, links and inline code as written
        click.echo(record["explanation"].rstrip("\n"))


@main.command()
@click.argument("target", metavar="PATH[:LINE]")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_exits
def explain(target: str, output_format: str) -> None:
    """Show how gradlint reads the training loops of PATH (or the loop around LINE)."""
    from gradlint.explain import explain_target

    try:
        click.echo(explain_target(target, output_format), nl=False)
    except SettingsError as exc:
        fail(str(exc))


@main.command()
@click.option("--cache-dir", type=click.Path(path_type=Path),
              help="The cache folder to remove (default: $GRADLINT_CACHE_DIR, else .gradlint_cache at the project root).")
@_exits
def clean(cache_dir: Path | None) -> None:
    """Remove the result cache folder."""
    directory = cache_dir or default_cache_dir()
    try:
        removed = clean_cache(directory)
    except CacheError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot remove {directory}: {exc.strerror or exc}")
    click.echo(f"Removed {directory}" if removed else f"No cache at {directory}")


@main.command()
@_exits
def lsp() -> None:
    """Run the language server on stdin/stdout (needs: pip install 'torch-gradlint[lsp]')."""
    from gradlint.lsp import missing_requirements, serve

    missing = missing_requirements()
    if missing:
        fail(f"the language server needs {', '.join(missing)}: pip install 'torch-gradlint[lsp]'")
    serve()
