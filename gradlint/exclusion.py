"""Which paths discovery skips: ``exclude`` / ``extend-exclude`` patterns and ``.gitignore`` files."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pathspec

from gradlint.config import Config, ConfigResolver, Overrides, matches
from gradlint.discovery import SKIPPED_DIRS

DEFAULT_EXCLUDE = tuple(sorted(SKIPPED_DIRS))


class PathFilter:
    """Decides whether the configuration governing a path excludes it, for one run.

    A path is governed by the configuration of its parent folder; command-line overrides
    apply on top. Exclude patterns are gitignore-style, relative to the configuration's folder;
    ``exclude`` replaces the default list (version-control, cache, build and virtualenv
    folders), ``extend-exclude`` adds to it.
    """

    def __init__(self, resolver: ConfigResolver, overrides: Overrides = Overrides()) -> None:
        self.resolver = resolver
        self.overrides = overrides
        self._ignores = GitIgnores()

    def _config(self, path: Path) -> Config:
        return self.resolver.for_folder(path.absolute().parent)

    def _patterns(self, cfg: Config) -> tuple[str, ...]:
        over = self.overrides
        exclude = over.exclude if over.exclude is not None else cfg.exclude
        return (*(DEFAULT_EXCLUDE if exclude is None else exclude), *cfg.extend_exclude, *over.extend_exclude)

    def excluded(self, path: Path, is_dir: bool) -> bool:
        """For a path found while walking a folder: excluded by patterns or by ``.gitignore``."""
        cfg = self._config(path)
        if matches(self._patterns(cfg), path, cfg.root, is_dir):
            return True
        respect = self.overrides.respect_gitignore
        if respect is None:
            respect = cfg.respect_gitignore
        return respect and self._ignores.ignored(path, is_dir)

    def explicitly_excluded(self, path: Path) -> bool:
        """For a path named on the command line: excluded only under ``force-exclude``, when the
        exclude patterns match it or one of its parent folders (``.gitignore`` does not apply)."""
        cfg = self._config(path)
        force = self.overrides.force_exclude
        if not (cfg.force_exclude if force is None else force):
            return False
        return matches(self._patterns(cfg), path, cfg.root, path.is_dir())


@lru_cache(maxsize=1024)
def _load_spec(path: Path, stamp: tuple[int, int]) -> pathspec.PathSpec:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


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

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether git would ignore ``path``."""
        path = path.absolute()
        in_repository, sources = self._sources_for(path.parent)
        if not in_repository:
            return False
        for spec, base in sources:
            relative = path.relative_to(base).as_posix() + ("/" if is_dir else "")
            decision = spec.check_file(relative).include
            if decision is not None:
                return decision
        return False
