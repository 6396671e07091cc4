"""Configuration files: ``[tool.gradlint]`` in ``pyproject.toml``, ``gradlint.toml``, ``.gradlint.toml``.

The configuration that governs a file is the nearest one found from the file's folder upward
(in one folder ``.gradlint.toml`` wins over ``gradlint.toml``, which wins over a
``pyproject.toml`` that has a ``[tool.gradlint]`` table). Files are not merged unless one says
``extend = "../pyproject.toml"``: then the keys it sets replace those of the file it extends (as
in ruff). Patterns (``exclude``, ``per-file-ignores``) are relative to the folder of the file
that wrote them.
:func:`settings_for` turns that configuration plus command-line overrides into the
:class:`~gradlint.settings.Settings` one file is linted with.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from gradlint.catalogue import CATALOGUE
from gradlint.listing import Listing
from gradlint.names import Kind
from gradlint.paths import is_file, is_folder
from gradlint.settings import Settings, SettingsError, expand_codes
from gradlint.source import read_source_file

if TYPE_CHECKING:
    import pathspec

# TOML and pattern matching are imported where they are used: a run in a tree without
# configuration files and with the default (plain-name) excludes needs neither.


def _toml() -> ModuleType:
    """The TOML reader (``tomllib``, or ``tomli`` before Python 3.11)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    return tomllib


def gitignore_spec(lines: Iterable[str]) -> pathspec.PathSpec:
    """Gitignore-style pattern ``lines`` compiled (``ValueError`` or ``re.error`` for a bad one)."""
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


CONFIG_NAMES = (".gradlint.toml", "gradlint.toml", "pyproject.toml")
NAME_KINDS = {
    "optimizers": Kind.OPTIMIZER,
    "schedulers": Kind.SCHEDULER,
    "scalers": Kind.SCALER,
    "accelerators": Kind.ACCELERATOR,
}


@dataclass(frozen=True)
class Config:
    """One configuration file's validated contents (hashable; ``None`` means "not set")."""

    path: Path | None = None
    root: Path = Path(".")
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False
    names: tuple[tuple[str, Kind], ...] = ()
    max_file_size: int | None = None
    target_version: tuple[int, int] | None = None
    extends: tuple[Path, ...] = ()  # the files `extend` read, nearest first


@dataclass(frozen=True)
class Overrides:
    """Command-line options that take precedence over configuration files."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool | None = None
    force_exclude: bool | None = None
    ignore_noqa: bool = False
    target_version: tuple[int, int] | None = None


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it is inside it (for messages)."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def _codes(value: Any, where: str) -> tuple[str, ...]:
    items = _strings(value, where)
    for item in items:
        try:
            expand_codes(CATALOGUE, [item])
        except SettingsError:
            raise SettingsError(f"{where}: unknown rule code or prefix {item!r}") from None
    return items


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{where}: expected a list of strings")
    return tuple(value)


def pattern_error(pattern: str) -> str | None:
    """Why ``pattern`` is no usable gitignore-style pattern (``[z-a]``, a lone ``!``, a
    trailing backslash), or None."""
    try:
        gitignore_spec([pattern])
    except (ValueError, re.error) as exc:
        return str(exc)
    return None


def _patterns(value: Any, where: str) -> tuple[str, ...]:
    patterns = _strings(value, where)
    for pattern in patterns:
        _check_pattern(pattern, where)
    return patterns


def _check_pattern(pattern: str, where: str) -> None:
    error = pattern_error(pattern)
    if error is not None:
        raise SettingsError(f"{where}: invalid pattern {pattern!r} ({error})")


def _size(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SettingsError(f"{where}: expected a whole number of bytes >= 0 (0: no limit)")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise SettingsError(f"{where}: expected true or false")
    return value


TARGET_VERSIONS = tuple(f"py3{minor}" for minor in range(8, 15))


def parse_target_version(value: Any, where: str) -> tuple[int, int]:
    """``"py312"`` as ``(3, 12)``; anything but one of :data:`TARGET_VERSIONS` raises."""
    if not isinstance(value, str) or value.strip().lower() not in TARGET_VERSIONS:
        raise SettingsError(f"{where}: expected one of {', '.join(TARGET_VERSIONS)}, got {value!r}")
    return 3, int(value.strip()[3:])


def _per_file_ignores(value: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: expected a table of glob = [codes]")
    for glob in value:
        _check_pattern(glob, where)
    return tuple((glob, _codes(codes, f"{where}.{glob!r}")) for glob, codes in value.items())


def _names(value: Any, where: str) -> tuple[tuple[str, Kind], ...]:
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: expected a table with {', '.join(NAME_KINDS)}")
    found: dict[str, Kind] = {}
    for key, names in value.items():
        if key not in NAME_KINDS:
            raise SettingsError(f"{where}: unknown key {key!r} (expected one of {', '.join(NAME_KINDS)})")
        for name in _strings(names, f"{where}.{key}"):
            if not name.isidentifier():
                raise SettingsError(f"{where}.{key}: {name!r} is not a Python identifier")
            found[name] = NAME_KINDS[key]
    return tuple(sorted(found.items()))


# key -> (Config field, validator). New keys go here.
_KEYS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "select": ("select", _codes),
    "ignore": ("ignore", _codes),
    "extend-select": ("extend_select", _codes),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _patterns),
    "extend-exclude": ("extend_exclude", _patterns),
    "respect-gitignore": ("respect_gitignore", _bool),
    "force-exclude": ("force_exclude", _bool),
    "names": ("names", _names),
    "max-file-size": ("max_file_size", _size),
    "target-version": ("target_version", parse_target_version),
}


def parse_override(text: str) -> tuple[str, Any]:
    """``--config KEY=VALUE``: the :class:`Config` field and validated value of one TOML
    ``key = value`` line (``select = ["GL1"]``, ``max-file-size = 0``)."""
    where = f"--config {text!r}"
    toml = _toml()
    try:
        table = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise SettingsError(f"{where}: not a TOML key = value ({exc})") from None
    if len(table) != 1:
        raise SettingsError(f"{where}: expected one key = value")
    [(key, value)] = table.items()
    if key not in _KEYS:
        raise SettingsError(f"{where}: unknown key {key!r} (known keys: {', '.join(_KEYS)})")
    field_name, validate = _KEYS[key]
    return field_name, validate(value, where)


def parse_per_file_ignore(text: str) -> tuple[str, tuple[str, ...]]:
    """``--per-file-ignores GLOB:CODES`` (``tests/*.py:GL101,GL2``) as a (glob, codes) pair."""
    glob, sep, codes = text.rpartition(":")
    where = f"--per-file-ignores {text!r}"
    if not sep or not glob:
        raise SettingsError(f"{where}: expected GLOB:CODE[,CODE...]")
    _check_pattern(glob, where)
    return glob, _codes([c.strip() for c in codes.split(",") if c.strip()], where)


def parse_config(table: dict[str, Any], path: Path, section: str, extending: tuple[Path, ...] = ()) -> Config:
    """Validate a ``[tool.gradlint]`` (or top-level) table read from ``path``; ``extending`` is
    the chain of files that extend this one (a cycle is an error)."""
    values: dict[str, Any] = {}
    base: Config | None = None
    for key, value in table.items():
        where = f"{_shown(path)}: {section} {key}"
        if key == "extend":
            base = _extended(value, path, where, extending)
            continue
        if key not in _KEYS:
            known = ", ".join(["extend", *_KEYS])
            raise SettingsError(f"{_shown(path)}: unknown key {key!r} in {section} (known keys: {known})")
        field_name, validate = _KEYS[key]
        values[field_name] = validate(value, where)
    if base is None:
        return Config(path=path, root=path.parent, **values)
    assert base.path is not None
    return replace(_rebased(base, path.parent), path=path, root=path.parent, extends=(base.path, *base.extends),
                   **values)


def _extended(value: Any, path: Path, where: str, extending: tuple[Path, ...]) -> Config:
    """The configuration that ``extend = value`` in ``path`` names (relative to ``path``'s folder)."""
    if not isinstance(value, str) or not value:
        raise SettingsError(f"{where}: expected the path of a configuration file")
    target = Path(os.path.normpath((path.parent / value).absolute()))
    chain = (*extending, path.absolute())
    if target in chain:
        raise SettingsError(f"{where}: {value!r} extends itself (through {', '.join(map(_shown, chain))})")
    if not is_file(target):
        raise SettingsError(f"{where}: {value!r} is not a file")
    found = _parse_file(target, _read_toml(target), chain)
    if found is None:
        raise SettingsError(f"{where}: {value!r} has no [tool.gradlint] table")
    return found


def _rebased(config: Config, root: Path) -> Config:
    """``config``'s patterns made relative to ``root`` (a folder at or under ``config.root``):
    patterns anchored elsewhere can match nothing under ``root`` and are dropped."""
    ignores = tuple((moved, codes) for glob, codes in config.per_file_ignores
                    for moved in [rebase_pattern(glob, config.root, root)] if moved is not None)
    exclude = None if config.exclude is None else _rebase_all(config.exclude, config.root, root)
    return replace(config, exclude=exclude, extend_exclude=_rebase_all(config.extend_exclude, config.root, root),
                   per_file_ignores=ignores)


def _rebase_all(patterns: tuple[str, ...], old: Path, new: Path) -> tuple[str, ...]:
    return tuple(p for p in (rebase_pattern(pattern, old, new) for pattern in patterns) if p is not None)


def rebase_pattern(pattern: str, old: Path, new: Path) -> str | None:
    """The gitignore-style ``pattern`` written relative to folder ``old``, relative to ``new``
    for the paths under ``new``; None when it matches none of them."""
    if old.absolute() == new.absolute():
        return pattern
    negated, body = (True, pattern[1:]) if pattern.startswith("!") else (False, pattern)
    if "/" not in body.rstrip("/") or body.startswith("**/"):
        return pattern  # matches at any depth, wherever the patterns are rooted
    try:
        inner = new.absolute().relative_to(old.absolute()).as_posix()
    except ValueError:
        return None
    anchored = body.lstrip("/")
    if not anchored.startswith(inner + "/"):
        return None  # anchored outside `new` (or behind a wildcard we cannot place): matches nothing here
    return ("!" if negated else "") + "/" + anchored[len(inner) + 1:]


def _read_toml(path: Path) -> dict[str, Any]:
    toml = _toml()
    try:
        return toml.loads(read_source_file(path).decode("utf-8"))
    except toml.TOMLDecodeError as exc:
        raise SettingsError(f"{_shown(path)}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise SettingsError(f"{_shown(path)}: invalid TOML: the file is not UTF-8") from None
    except RecursionError:
        raise SettingsError(f"{_shown(path)}: invalid TOML: nested too deeply to read") from None
    except OSError as exc:
        raise SettingsError(f"{_shown(path)}: cannot read configuration: {exc.strerror or exc}") from None


def _parse_file(path: Path, data: dict[str, Any], extending: tuple[Path, ...] = ()) -> Config | None:
    if path.name != "pyproject.toml":
        return parse_config(data, path, "top level", extending)
    tool = data.get("tool", {})
    if not isinstance(tool, dict) or "gradlint" not in tool:
        return None
    if not isinstance(tool["gradlint"], dict):
        raise SettingsError(f"{_shown(path)}: [tool.gradlint] must be a table")
    return parse_config(tool["gradlint"], path, "[tool.gradlint]", extending)


_LOADED: dict[Path, tuple[tuple[tuple[int, int] | None, ...], Config | None]] = {}
"""Configurations read, by file, with the stamps of the file and of every file it extends."""


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def _load(path: Path) -> Config | None:
    """The configuration in ``path``, read again when it or a file it extends has changed."""
    known = _LOADED.get(path)
    if known is not None:
        stamps, config = known
        chain = (path, *(config.extends if config else ()))
        if tuple(map(_stamp, chain)) == stamps:
            return config
    config = _read_config(path)
    chain = (path, *(config.extends if config else ()))
    if len(_LOADED) >= 256:
        _LOADED.clear()
    _LOADED[path] = (tuple(map(_stamp, chain)), config)
    return config


def _read_config(path: Path) -> Config | None:
    try:
        data = _read_toml(path)
    except SettingsError:
        if path.name == "pyproject.toml" and not _may_configure_gradlint(path):
            return None  # another tool's broken file: not ours to judge
        raise
    return _parse_file(path, data)


def _may_configure_gradlint(path: Path) -> bool:
    """Whether an unreadable ``pyproject.toml`` may hold a ``[tool.gradlint]`` table: its bytes
    name gradlint somewhere (in any spelling TOML allows, or through a bare ``[tool]`` table)."""
    try:
        return b"gradlint" in read_source_file(path)
    except OSError:
        return True


def load_config(path: Path) -> Config | None:
    """The configuration in ``path`` (cached per file and modification time).

    ``None`` for a ``pyproject.toml`` without a ``[tool.gradlint]`` table.
    """
    path = path.absolute()
    try:
        path.stat()
    except OSError as exc:
        raise SettingsError(f"{_shown(path)}: cannot read configuration: {exc.strerror or exc}") from None
    return _load(path)


class ConfigResolver:
    """Finds the configuration governing each path, remembering answers per folder for one run.

    ``config`` (``--config``) governs every path; ``isolated`` (``--isolated``) ignores all
    configuration files.
    """

    def __init__(self, *, config: Path | None = None, isolated: bool = False,
                 values: tuple[tuple[str, Any], ...] = ()) -> None:
        if config is not None and not isolated and not config.is_file():
            raise SettingsError(f"{config}: configuration file not found")
        self.config = config
        self.isolated = isolated
        self.values = dict(values)  # --config KEY=VALUE: set in every configuration, as if written there
        self._folders: dict[Path, Config] = {}
        self._paths: dict[Path, Config] = {}  # a run asks for each file's twice (settings, size limit)

    def for_path(self, path: Path) -> Config:
        """The configuration for a file (or folder) ``path``, with the command line's values."""
        found = self._paths.get(path)
        if found is None:
            absolute = path.absolute()
            found = self._paths[path] = self.for_folder(absolute if is_folder(absolute) else absolute.parent)
        return found

    def for_files(self, files: Iterable[Path]) -> dict[Path, Config]:
        """:meth:`for_path` of each of ``files``, paths known not to be folders (what discovery
        found), worked out once per folder: the files of one folder share one answer."""
        by_folder: dict[str, Config] = {}
        found: dict[Path, Config] = {}
        for path in files:
            key = os.path.dirname(os.fspath(path))
            cfg = by_folder.get(key)
            if cfg is None:
                cfg = by_folder[key] = self.for_folder(path.absolute().parent)
            found[path] = cfg
        return found

    def for_folder(self, folder: Path, listing: Listing | None = None) -> Config:
        """The configuration for files directly inside the absolute ``folder``, with the command
        line's values; ``listing`` (what ``folder`` holds, if known) spares looking for
        configuration files it does not list."""
        found = self._for_folder(folder, listing)
        return replace(found, **self.values) if self.values else found

    def _for_folder(self, folder: Path, listing: Listing | None = None) -> Config:
        if self.isolated:
            return Config(root=Path.cwd().absolute())
        if self.config is not None:
            path = self.config.absolute()
            return load_config(path) or Config(path=path, root=path.parent)
        found = self._folders.get(folder)
        if found is None:
            found = self._own(folder, listing)
            if found is None:
                parent = folder.parent
                found = Config(root=Path.cwd().absolute()) if parent == folder else self._for_folder(parent)
            self._folders[folder] = found
        return found

    @staticmethod
    def _own(folder: Path, listing: Listing | None) -> Config | None:
        for name in CONFIG_NAMES:
            if listing is not None and not listing.may_hold(name):
                continue
            path = folder / name
            if is_file(path):
                found = load_config(path)
                if found is not None:
                    return found
        return None


def check_overrides(overrides: Overrides) -> None:
    """Raise :class:`SettingsError` for an unknown code in ``--select`` / ``--ignore`` /
    ``--extend-select`` or an unusable pattern in ``--exclude`` / ``--extend-exclude``."""
    for option, codes in (("--select", overrides.select or ()), ("--ignore", overrides.ignore),
                          ("--extend-select", overrides.extend_select)):
        for code in codes:
            try:
                expand_codes(CATALOGUE, [code])
            except SettingsError:
                raise SettingsError(f"{option}: unknown rule code or prefix {code!r}") from None
    for option, patterns in (("--exclude", overrides.exclude or ()), ("--extend-exclude", overrides.extend_exclude)):
        for pattern in patterns:
            _check_pattern(pattern, option)


def _layer(chosen: set[str], select: tuple[str, ...] | None, ignore: tuple[str, ...],
           extend_select: tuple[str, ...]) -> set[str]:
    if select is not None:
        chosen = expand_codes(CATALOGUE, list(select))
    return (chosen | expand_codes(CATALOGUE, list(extend_select))) - expand_codes(CATALOGUE, list(ignore))


@lru_cache(maxsize=256)
def _base_settings(cfg: Config, overrides: Overrides) -> Settings:
    chosen = {code for code, info in CATALOGUE.items() if info.default}
    chosen = _layer(chosen, cfg.select, cfg.ignore, cfg.extend_select)
    chosen = _layer(chosen, overrides.select, overrides.ignore, overrides.extend_select)
    target = overrides.target_version or cfg.target_version
    return Settings(select=frozenset(chosen), extra_names=cfg.names, ignore_noqa=overrides.ignore_noqa,
                    target_version=target)


@lru_cache(maxsize=256)
def compiled_patterns(patterns: tuple[str, ...]) -> pathspec.PathSpec:
    """Gitignore-style ``patterns`` compiled once (kept for the run and the next ones)."""
    return gitignore_spec(patterns)


def matches(patterns: tuple[str, ...], path: Path, root: Path, is_dir: bool = False) -> bool:
    """Whether gitignore-style ``patterns`` relative to ``root`` match ``path``.

    A path outside ``root`` is matched by its name alone.
    """
    if not patterns:
        return False
    try:
        relative = path.absolute().relative_to(root.absolute()).as_posix()
    except ValueError:
        relative = path.name
    return matches_relative(patterns, relative, is_dir)


def matches_relative(patterns: tuple[str, ...], relative: str, is_dir: bool = False) -> bool:
    """:func:`matches` for a path already made relative to the patterns' root (posix form)."""
    if not patterns or relative in ("", "."):
        return False
    names = plain_names(patterns)
    if names is not None:
        return not names.isdisjoint(relative.split("/"))
    return compiled_patterns(patterns).match_file(relative + "/" if is_dir else relative)


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*|\.[A-Za-z0-9_][A-Za-z0-9_.-]*")


@lru_cache(maxsize=256)
def plain_names(patterns: tuple[str, ...]) -> frozenset[str] | None:
    """The patterns as a set of names when every one is a plain name (no slash, wildcard,
    negation, escape or comment; the default ``exclude`` list is): in gitignore's rules such a
    pattern matches a path one of whose parts is that name, file or folder. None otherwise."""
    if all(_PLAIN_NAME.fullmatch(pattern) for pattern in patterns):
        return frozenset(patterns)
    return None


def settings_for(path: Path, *, config: Path | None = None, isolated: bool = False,
                 overrides: Overrides = Overrides(), resolver: ConfigResolver | None = None) -> Settings:
    """The settings one file is linted with: its configuration, the overrides, its per-file ignores.

    ``resolver`` (optional) shares folder look-ups across the files of one run; otherwise
    ``config`` and ``isolated`` choose the configuration. Raises
    :class:`~gradlint.settings.SettingsError` (naming the file and key) for a bad configuration.
    """
    resolver = resolver or ConfigResolver(config=config, isolated=isolated)
    return file_settings(path, resolver.for_path(path), overrides)


def files_settings(configs: Mapping[Path, Config], overrides: Overrides) -> dict[Path, Settings]:
    """:func:`file_settings` of each file of ``configs`` (see :meth:`ConfigResolver.for_files`),
    worked out once per configuration for the files that no per-file ignore can concern."""
    shared: dict[int, Settings] = {}  # by configuration object: ``configs`` keeps them alive
    found: dict[Path, Settings] = {}
    for path, cfg in configs.items():
        if cfg.per_file_ignores:
            found[path] = file_settings(path, cfg, overrides)
            continue
        settings = shared.get(id(cfg))
        if settings is None:
            settings = shared[id(cfg)] = _base_settings(cfg, overrides)
        found[path] = settings
    return found


def file_settings(path: Path, cfg: Config, overrides: Overrides) -> Settings:
    """:func:`settings_for` the file ``path`` governed by ``cfg`` (see :meth:`ConfigResolver.for_files`)."""
    settings = _base_settings(cfg, overrides)
    ignored: set[str] = set()
    for glob, codes in cfg.per_file_ignores:
        if matches((glob,), path, cfg.root):
            ignored |= expand_codes(CATALOGUE, list(codes))
    if not ignored & settings.select:
        return settings
    return replace(settings, select=settings.select - ignored)
