"""The command line: ``gradlint check``."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import TextIO

import click

from gradlint import __version__
from gradlint.budget import DEFAULT_TIMEOUT
from gradlint.cache import Cache, CacheError, default_cache_dir
from gradlint.cache import clean as clean_cache
from gradlint.catalogue import CATALOGUE
from gradlint.config import ConfigResolver, Overrides, check_overrides, settings_for
from gradlint.diagnostics import Diagnostic
from gradlint.discovery import discover
from gradlint.exclusion import PathFilter
from gradlint.reporters import DEFAULT_FORMAT, FORMATS, Report, ReportOptions, render
from gradlint.rule_docs import rule_record
from gradlint.runner import DEFAULT_MAX_FILE_SIZE, RunResult, default_jobs, display_path, run
from gradlint.settings import SettingsError

# What only some commands and options need (the fixer, the analysis, rich) is imported where
# it is used: a ``check`` that the cache answers loads none of it.


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


def fail(message: str) -> None:
    """One clear line on stderr, exit status 2."""
    click.echo(f"gradlint: error: {message}", err=True)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gradlint")
def main() -> None:
    """gradlint: find gradient-accumulation, clipping and scheduler bugs in PyTorch training loops."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--format", "--output-format", "output_format", type=click.Choice(list(FORMATS)),
              default=DEFAULT_FORMAT, show_default=True, help="Output format (text is concise).")
@click.option("--select", help="Comma-separated rule codes or prefixes to enable instead of the configured ones.")
@click.option("--ignore", help="Comma-separated rule codes or prefixes to disable.")
@click.option("--extend-select", help="Comma-separated rule codes or prefixes to enable as well.")
@click.option("--exclude", help="Comma-separated gitignore-style patterns replacing the default excludes.")
@click.option("--extend-exclude", help="Comma-separated gitignore-style patterns to exclude as well.")
@click.option("--force-exclude/--no-force-exclude", default=None,
              help="Apply excludes to files named on the command line too (for pre-commit).")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None,
              help="Skip files that .gitignore files ignore (default: on).")
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Use this configuration file for every file.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@click.option("--stdin-filename", help="With PATH '-': the name of the file read from stdin.")
@click.option("--add-noqa", is_flag=True, help="Add a '# noqa: CODE' comment for every current finding.")
@click.option("-o", "--output-file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report to this file instead of stdout.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of each finding.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only (no summary line).")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour the output (auto: only on a terminal, honouring NO_COLOR / FORCE_COLOR).")
@click.option("--fix", is_flag=True, help="Apply the safe fixes in place, then report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix or --diff) the fixes that rest on an assumption.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff and write nothing; exit 1 if there are any.")
@click.option("--show-fixes", is_flag=True, help="List the problems fixed, per file and rule (--diff always lists them).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when problems are found.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the result cache.")
@click.option("--cache-dir", type=click.Path(path_type=Path),
              help="The result cache folder (default: $GRADLINT_CACHE_DIR, else .gradlint_cache at the project root).")
@click.option("-j", "--jobs", "jobs_text", metavar="N",
              help="Worker processes (default: the number of CPUs; 1: no pool).")
@click.option("--max-file-size", "max_size_text", metavar="BYTES",
              help=f"Skip files larger than this, with a notice (default: the max-file-size setting, "
                   f"else {DEFAULT_MAX_FILE_SIZE}; 0: no limit).")
@click.option("--timeout", "timeout_text", metavar="SECONDS",
              help=f"Give up on a file whose analysis takes more CPU time than this, with a notice "
                   f"(default: {DEFAULT_TIMEOUT}; 0: no limit).")
def check(paths: tuple[Path, ...], output_format: str, select: str | None, ignore: str | None,
          extend_select: str | None, exclude: str | None, extend_exclude: str | None,
          force_exclude: bool | None, respect_gitignore: bool | None, config_path: Path | None,
          isolated: bool, stdin_filename: str | None, add_noqa: bool, output_file: Path | None,
          statistics: bool, quiet: bool, color: str, fix: bool, unsafe_fixes: bool, diff: bool, show_fixes: bool,
          exit_zero: bool, no_cache: bool, cache_dir: Path | None, jobs_text: str | None,
          max_size_text: str | None, timeout_text: str | None) -> None:
    """Check PATHS (files or folders; default: the current folder; '-': stdin)."""
    jobs = _whole_number("--jobs", jobs_text, minimum=1) if jobs_text is not None else default_jobs()
    max_size = _whole_number("--max-file-size", max_size_text, minimum=0) if max_size_text is not None else None
    timeout = _whole_number("--timeout", timeout_text, minimum=0) if timeout_text is not None else DEFAULT_TIMEOUT
    cache = None if no_cache else _cache(cache_dir)
    overrides = Overrides(select=_codes(select), ignore=_codes(ignore) or (),
                          extend_select=_codes(extend_select) or (), exclude=_codes(exclude),
                          extend_exclude=_codes(extend_exclude) or (), respect_gitignore=respect_gitignore,
                          force_exclude=force_exclude)
    options = ReportOptions(quiet=quiet, statistics=statistics, unsafe_fixes=unsafe_fixes)
    try:
        check_overrides(overrides)
        resolver = ConfigResolver(config=config_path, isolated=isolated)
        if paths == (Path("-"),) or (not paths and stdin_filename):
            if diff:
                fail("--diff does not read stdin; use --fix to print the fixed text")
            _check_stdin(stdin_filename, resolver, overrides, output_format, output_file, options, color,
                         exit_zero, fix=fix, unsafe=unsafe_fixes, timeout=timeout)
        files = discover(list(paths) or [Path(".")], PathFilter(resolver, overrides))
        settings = {path: settings_for(path, overrides=overrides, resolver=resolver) for path in files}
        limits = max_size if max_size is not None else {path: _size_limit(resolver, path) for path in files}
    except SettingsError as exc:
        fail(str(exc))
    if fix or diff:
        _fix(files, settings, diff, show_fixes, output_format, output_file, options, color, exit_zero, timeout)
    result = run(files, settings, jobs=jobs, cache=cache, max_file_size=limits, timeout=timeout)
    _notify_skipped(result, timeout)
    if add_noqa:
        _add_noqa(files, result.diagnostics)
    _emit(Report(result.diagnostics, result.files_checked), output_format, output_file, options, color)
    sys.exit(0 if exit_zero or not result.diagnostics else 1)


def _whole_number(option: str, text: str, minimum: int) -> int:
    """The value of a numeric option; anything else (or below ``minimum``) fails in one line."""
    try:
        value = int(text.strip())
    except ValueError:
        value = None
    if value is None or value < minimum:
        fail(f"{option} expects a whole number >= {minimum}, got {text!r}")
    return value


def _cache(cache_dir: Path | None) -> Cache:
    """The result cache in ``--cache-dir`` or its default folder."""
    directory = cache_dir or default_cache_dir()
    if directory.exists() and not directory.is_dir():
        fail(f"the cache folder {directory} is a file")
    return Cache(directory)


def _size_limit(resolver: ConfigResolver, path: Path) -> int:
    """The ``max-file-size`` of the configuration governing ``path``, else the default."""
    configured = resolver.for_path(path).max_file_size
    return DEFAULT_MAX_FILE_SIZE if configured is None else configured


def _notify_skipped(result: RunResult, timeout: int) -> None:
    """One notice on stderr per file skipped for its size or given up for its analysis time
    (not a diagnostic)."""
    for skipped in result.skipped:
        click.echo(f"gradlint: notice: skipped {skipped.path}: {skipped.size} bytes is over the "
                   f"{skipped.limit}-byte limit (--max-file-size 0 checks it)", err=True)
    for path in result.timed_out:
        click.echo(f"gradlint: notice: gave up on {path}: its analysis took more than {timeout} CPU seconds "
                   f"(--timeout 0 removes the limit)", err=True)


def _emit(report: Report, output_format: str, output_file: Path | None, options: ReportOptions, color: str,
          stream: TextIO | None = None) -> None:
    """Render ``report`` to ``--output-file`` or to ``stream`` (stdout by default)."""
    if output_file is None:
        stream = stream or sys.stdout
        render(report, output_format, stream, dataclasses.replace(options, color=use_color(color, stream)))
        return
    try:
        output_file.parent.mkdir(parents=True, exist_ok=True)
        with output_file.open("w", encoding="utf-8", newline="\n") as handle:
            render(report, output_format, handle, dataclasses.replace(options, color=color == "always"))
    except OSError as exc:
        fail(f"cannot write {output_file}: {exc.strerror or exc}")


def _fix(files: list[Path], settings: dict, diff: bool, show_fixes: bool, output_format: str,
         output_file: Path | None, options: ReportOptions, color: str, exit_zero: bool, timeout: int) -> None:
    """``--fix`` (write the fixes, report what remains) or ``--diff`` (print them), then exit."""
    from gradlint.fix_run import fix_paths, problems, render_diff, render_fixes

    outcome = fix_paths(files, settings, options.unsafe_fixes, write=not diff, timeout=timeout)
    for line in problems(outcome):
        click.echo(f"gradlint: warning: {line}", err=True)
    if diff:
        render_diff(outcome, sys.stdout)
        render_fixes(outcome, sys.stderr, would=True)
        sys.exit(0 if exit_zero or not outcome.changed else 1)
    if show_fixes:
        render_fixes(outcome, sys.stdout)
    remaining = outcome.remaining
    _emit(Report(remaining, len(files), fixed=len(outcome.fixed)), output_format, output_file, options, color)
    sys.exit(0 if exit_zero or not remaining else 1)


def _check_stdin(stdin_filename: str | None, resolver: ConfigResolver, overrides: Overrides,
                 output_format: str, output_file: Path | None, options: ReportOptions, color: str,
                 exit_zero: bool, fix: bool = False, unsafe: bool = False, timeout: int = 0) -> None:
    """Lint (with ``fix``: fix, writing the result to stdout) the text on stdin, then exit.
    An analysis over its ``timeout`` (CPU seconds) is a notice, the text written back as it is.

    Raises :class:`SettingsError` for a bad configuration.
    """
    from gradlint.budget import AnalysisTimeout, time_budget
    from gradlint.stdin import check_stdin

    data = sys.stdin.buffer.read()
    name = Path(stdin_filename) if stdin_filename else Path.cwd() / "-"
    display = display_path(name) if stdin_filename else "-"
    if stdin_filename and PathFilter(resolver, overrides).explicitly_excluded(name):
        diagnostics: list[Diagnostic] = []
        text, output, files, fixed = "", data if fix else None, 0, 0
    else:
        settings = settings_for(name, overrides=overrides, resolver=resolver)
        try:
            with time_budget(timeout):
                checked = check_stdin(data, display, settings, fix=fix, unsafe=unsafe)
        except AnalysisTimeout:
            click.echo(f"gradlint: notice: gave up on {display}: its analysis took more than {timeout} CPU seconds "
                       f"(--timeout 0 removes the limit)", err=True)
            if fix:
                sys.stdout.buffer.write(data)
            sys.exit(0)
        diagnostics, text, output, files, fixed = (checked.diagnostics, checked.text, checked.output, 1,
                                                   checked.fixed)
    if output is not None:
        sys.stdout.buffer.write(output)
        sys.stdout.flush()
    report = Report(diagnostics, files, {display: text}, fixed=fixed)
    _emit(report, output_format, output_file, options, color, sys.stderr if output is not None else None)
    sys.exit(0 if exit_zero or not diagnostics else 1)


def _add_noqa(files: list[Path], diagnostics: list[Diagnostic]) -> None:
    """``--add-noqa``: suppress every finding in place, say how many, exit 0 (2 if a file failed)."""
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
            click.echo(f"gradlint: error: cannot add noqa to {display_path(path)}: {exc.strerror or exc}", err=True)
            failed += 1
            continue
        added += result.added
        skipped += result.skipped
    noun = "directive" if added == 1 else "directives"
    click.echo(f"Added {added} noqa {noun}.")
    if skipped:
        click.echo(f"{skipped} reported line(s) cannot carry a comment (inside a string or after a backslash).")
    sys.exit(2 if failed else 0)


@main.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule: code, name, severity, fix.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
def rule(code: str | None, show_all: bool, output_format: str) -> None:
    """Explain rule CODE (its document), or list every rule with --all."""
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.table import Table

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
    info = CATALOGUE.get(code.strip().upper())
    if info is None:
        fail(f"unknown rule code {code!r} (gradlint rule --all lists them)")
    record = rule_record(info, with_doc=True)
    if output_format == "json":
        click.echo(json.dumps(record, indent=2))
    elif record["explanation"] is None:
        fail(f"the document of {info.code} is not installed")
    else:
        Console(highlight=False).print(Markdown(record["explanation"]))


@main.command()
@click.option("--cache-dir", type=click.Path(path_type=Path),
              help="The cache folder to remove (default: $GRADLINT_CACHE_DIR, else .gradlint_cache at the project root).")
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
def lsp() -> None:
    """Run the language server on stdin/stdout (needs: pip install 'gradlint[lsp]')."""
    from gradlint.lsp import missing_requirements, serve

    missing = missing_requirements()
    if missing:
        fail(f"the language server needs {', '.join(missing)}: pip install 'gradlint[lsp]'")
    serve()
