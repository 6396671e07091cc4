"""``gradlint check --show-settings``: the settings one file is checked with, and where they come from."""

from __future__ import annotations

import json
from pathlib import Path

from gradlint.config import ConfigResolver, Overrides, settings_for
from gradlint.runner import display_path


def _toml(value: object) -> str:
    """A TOML-looking rendering of a setting (strings and lists of strings quoted)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def describe_settings(path: Path, resolver: ConfigResolver, overrides: Overrides) -> str:
    """The resolved settings of ``path``: the configuration file (and the files it extends),
    its keys, then the rules in force for this file (command line and per-file-ignores
    applied)."""
    cfg = resolver.for_path(path)
    settings = settings_for(path, overrides=overrides, resolver=resolver)
    source = "none (defaults)" if cfg.path is None else display_path(cfg.path)
    if resolver.isolated:
        source = "none (--isolated)"
    lines = [f"Settings for: {display_path(path)}", f"Configuration file: {source}"]
    lines += [f"Extends: {display_path(extended)}" for extended in cfg.extends]
    if resolver.values:
        lines.append(f"Set on the command line: {', '.join(k.replace('_', '-') for k in resolver.values)}")
    lines.append(f"Project root: {display_path(cfg.root)}")
    lines.append("")
    keys: list[tuple[str, object]] = [
        ("select", list(cfg.select) if cfg.select is not None else None),
        ("ignore", list(cfg.ignore)),
        ("extend-select", list(cfg.extend_select)),
        ("exclude", list(cfg.exclude) if cfg.exclude is not None else None),
        ("extend-exclude", list(cfg.extend_exclude)),
        ("respect-gitignore", cfg.respect_gitignore if overrides.respect_gitignore is None
         else overrides.respect_gitignore),
        ("force-exclude", cfg.force_exclude if overrides.force_exclude is None else overrides.force_exclude),
        ("max-file-size", cfg.max_file_size),
        ("target-version", _version(overrides.target_version or cfg.target_version)),
    ]
    for key, value in keys:
        lines.append(f"{key} = {'(default)' if value is None else _toml(value)}")
    lines += [f"per-file-ignores.{json.dumps(glob)} = {_toml(codes)}" for glob, codes in cfg.per_file_ignores]
    lines += [f"names.{kind.name.lower()} += {json.dumps(name)}" for name, kind in cfg.names]
    lines.append("")
    lines.append(f"Rules checked in this file: {_toml(sorted(settings.select))}")
    if settings.ignore_noqa:
        lines.append("Suppression comments: ignored (--ignore-noqa)")
    return "\n".join(lines) + "\n"


def _version(version: tuple[int, int] | None) -> str | None:
    return None if version is None else f"py{version[0]}{version[1]}"
