"""Which paths discovery skips: ``exclude`` / ``extend-exclude`` patterns and ``.gitignore`` files."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pathspec

from gradlint.config import Config, ConfigResolver, Overrides, matches, matches_relative, pattern_error
from gradlint.paths import SKIPPED_DIRS
from gradlint.source import read_source_file

DEFAULT_EXCLUDE = tuple(sorted(SKIPPED_DIRS))


class PathFilter:
    """Decides whether the configuration governing a path excludes it, for one run.

    A path is governed by the configuration of its parent folder; command-line overrides
    apply on top. Exclude patterns are gitignore-style, relative to the configuration's folder;
    ``exclude`` replaces the default list (version-control, cache, build and virtualenv
    folders), ``extend-exclude`` adds to it.
    """

    def __init__(self, resolver: ConfigResolver, overrides: Overrides | None = None) -> None:
        self.resolver = resolver
        self.overrides = overrides if overrides is not None else Overrides()
        self._ignores = GitIgnores()
        self._folders: dict[Path, _FolderRules] = {}

    def _config(self, path: Path) -> Config:
        return self.resolver.for_folder(path.absolute().parent)

    def _patterns(self, cfg: Config) -> tuple[str, ...]:
        over = self.overrides
        exclude = over.exclude if over.exclude is not None else cfg.exclude
        return (*(DEFAULT_EXCLUDE if exclude is None else exclude), *cfg.extend_exclude, *over.extend_exclude)

    def excluded(self, path: Path, is_dir: bool) -> bool:
        """For a path found while walking a folder: excluded by patterns or by ``.gitignore``."""
        rules = self._rules(path.parent)
        name = path.name
        if matches_relative(rules.patterns, name if rules.prefix is None else rules.prefix + name, is_dir):
            return True
        return rules.respect_gitignore and self._ignores.ignored_in(rules.folder, name, is_dir)

    def _rules(self, folder: Path) -> _FolderRules:
        """What decides for the entries of ``folder``, worked out once per folder: a walk asks
        for every file, and path arithmetic would cost more than the matching."""
        found = self._folders.get(folder)
        if found is None:
            absolute = folder.absolute()
            cfg = self.resolver.for_folder(absolute)
            try:
                relative = absolute.relative_to(cfg.root.absolute()).as_posix()
                prefix: str | None = "" if relative == "." else relative + "/"
            except ValueError:
                prefix = None  # outside the configuration's folder: matched by name alone
            respect = self.overrides.respect_gitignore
            if respect is None:
                respect = cfg.respect_gitignore
            found = self._folders[folder] = _FolderRules(absolute, self._patterns(cfg), prefix, respect)
        return found

    def explicitly_excluded(self, path: Path) -> bool:
        """For a path named on the command line: excluded only under ``force-exclude``, when the
        exclude patterns match it or one of its parent folders (``.gitignore`` does not apply)."""
        cfg = self._config(path)
        force = self.overrides.force_exclude
        if not (cfg.force_exclude if force is None else force):
            return False
        return matches(self._patterns(cfg), path, cfg.root, path.is_dir())


@dataclass(frozen=True)
class _FolderRules:
    """The exclusion rules for the entries of one folder."""

    folder: Path  # absolute
    patterns: tuple[str, ...]
    prefix: str | None  # the folder relative to the configuration's root, "/"-terminated
    respect_gitignore: bool


@lru_cache(maxsize=1024)
def _load_spec(path: Path, stamp: tuple[int, int]) -> pathspec.PathSpec:
    lines = read_source_file(path).decode("utf-8", "replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(line for line in lines if pattern_error(line) is None)


def _spec(path: Path) -> pathspec.PathSpec | None:
    try:
        info = path.stat()
        return _load_spec(path, (info.st_mtime_ns, info.st_size))
    except OSError:
        return None


_Sources = tuple[tuple[pathspec.PathSpec, Path], ...]


class GitIgnores:
    """What git ignores: nested ``.gitignore`` files (the deepest that decides wins) and
    ``.git/info/exclude``, within the repository holding a path (nothing outside a repository).

    Folder look-ups are remembered for the life of the object (one run).
    """

    def __init__(self) -> None:
        self._folders: dict[Path, tuple[bool, _Sources]] = {}
        self._prefixes: dict[Path, tuple[tuple[pathspec.PathSpec, str], ...] | None] = {}

    def _sources_for(self, folder: Path) -> tuple[bool, _Sources]:
        """Whether ``folder`` is inside a repository, and its ignore files, deepest first."""
        found = self._folders.get(folder)
        if found is None:
            own = _spec(folder / ".gitignore")
            sources: _Sources = ((own, folder),) if own else ()
            if (folder / ".git").exists():
                exclude = _spec(folder / ".git" / "info" / "exclude")
                found = (True, sources + (((exclude, folder),) if exclude else ()))
            elif folder.parent == folder:
                found = (False, ())
            else:
                in_repository, above = self._sources_for(folder.parent)
                found = (in_repository, sources + above)
            self._folders[folder] = found
        return found

    def ignored_in(self, folder: Path, name: str, is_dir: bool) -> bool:
        """Whether git would ignore the entry ``name`` of the absolute ``folder``."""
        if folder not in self._prefixes:
            in_repository, sources = self._sources_for(folder)
            self._prefixes[folder] = tuple(
                (spec, "" if base == folder else folder.relative_to(base).as_posix() + "/")
                for spec, base in sources) if in_repository else None
        prefixes = self._prefixes[folder]
        if prefixes is None:
            return False
        relative = name + ("/" if is_dir else "")
        for spec, prefix in prefixes:
            decision = spec.check_file(prefix + relative).include
            if decision is not None:
                return decision
        return False
