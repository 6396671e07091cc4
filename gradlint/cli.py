"""The command line: ``gradlint check``."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console

from gradlint import __version__
from gradlint.discovery import discover
from gradlint.report import render_json, render_text
from gradlint.rules import CATALOGUE
from gradlint.runner import run
from gradlint.settings import Settings, SettingsError, resolve_selection


def _codes(value: str | None) -> list[str] | None:
    return [c for c in value.split(",") if c.strip()] if value else None


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
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@click.option("--select", help="Comma-separated rule codes or prefixes to enable (default: all).")
@click.option("--ignore", help="Comma-separated rule codes or prefixes to disable.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when problems are found.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the result cache.")
def check(paths: tuple[Path, ...], output_format: str, select: str | None, ignore: str | None,
          exit_zero: bool, no_cache: bool) -> None:
    """Check PATHS (files or folders; default: the current folder)."""
    try:
        codes = resolve_selection(CATALOGUE, _codes(select), _codes(ignore))
    except SettingsError as exc:
        fail(str(exc))
    settings = Settings(select=codes)
    result = run(discover(list(paths) or [Path(".")]), settings)
    if output_format == "json":
        render_json(result.diagnostics, sys.stdout)
    else:
        render_text(result.diagnostics, result.files_checked, Console(highlight=False))
    sys.exit(0 if exit_zero or not result.diagnostics else 1)
