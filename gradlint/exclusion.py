"""Which paths discovery skips: ``exclude`` / ``extend-exclude`` patterns and ``.gitignore`` files."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from gradlint.config import (
    Config,
    ConfigResolver,
    Overrides,
    compiled_patterns,
    gitignore_spec,
    matches,
    pattern_error,
    plain_names,
)
from gradlint.listing import Listing
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
        self._folders: dict[Path, FolderRules] = {}

    def _config(self, path: Path) -> Config:
        return self.resolver.for_folder(path.absolute().parent)

    def _patterns(self, cfg: Config) -> tuple[str, ...]:
        over = self.overrides
        exclude = over.exclude if over.exclude is not None else cfg.exclude
        return (*(DEFAULT_EXCLUDE if exclude is None else exclude), *cfg.extend_exclude, *over.extend_exclude)

    def rules(self, folder: Path, listing: Listing | None = None, parent: FolderRules | None = None) -> FolderRules:
        """What decides for the entries of the absolute ``folder`` met in a walk, worked out once
        per folder (a walk asks for every entry). ``listing`` (what the folder holds) spares
        looking for configuration and ignore files it does not list; ``parent`` (the rules of
        the folder holding it) spares the path arithmetic when both share a configuration."""
        found = self._folders.get(folder)
        if found is None:
            cfg = self.resolver.for_folder(folder, listing)
            prefix: str | None
            if parent is not None and parent.config is cfg and parent.prefix is not None:
                prefix = parent.prefix + folder.name + "/"
            else:
                try:
                    relative = folder.relative_to(cfg.root.absolute()).as_posix()
                    prefix = "" if relative == "." else relative + "/"
                except ValueError:
                    prefix = None  # outside the configuration's folder: matched by name alone
            respect = self.overrides.respect_gitignore
            if respect is None:
                respect = cfg.respect_gitignore
            ignores = self._ignores.prefixes(folder, listing) if respect else None
            found = self._folders[folder] = FolderRules(cfg, self._patterns(cfg), prefix, ignores)
        return found

    def explicitly_excluded(self, path: Path) -> bool:
        """For a path named on the command line: excluded only under ``force-exclude``, when the
        exclude patterns match it or one of its parent folders (``.gitignore`` does not apply)."""
        cfg = self._config(path)
        force = self.overrides.force_exclude
        if not (cfg.force_exclude if force is None else force):
            return False
        return matches(self._patterns(cfg), path, cfg.root, path.is_dir())


if TYPE_CHECKING:
    import pathspec

    _Prefixed = tuple[tuple[pathspec.PathSpec, str], ...]
    """Ignore files that apply to a folder's entries, deepest first, each with the folder's
    path relative to the ignore file's own folder ("/"-terminated, "" for the same folder)."""
    _Sources = tuple[tuple[pathspec.PathSpec, Path], ...]


class FolderRules:
    """The exclusion rules for the entries of one folder: its configuration's patterns, the
    folder relative to that configuration's root, and (unless ``.gitignore`` files are not
    respected or the folder is in no repository, None) the ignore files that apply."""

    __slots__ = ("config", "prefix", "_names", "_every", "_spec", "_ignores")

    def __init__(self, config: Config, patterns: tuple[str, ...], prefix: str | None,
                 ignores: _Prefixed | None) -> None:
        self.config = config
        self.prefix = prefix  # "/"-terminated; None: outside the configuration's folder
        self._ignores = ignores
        self._names = plain_names(patterns) if patterns else frozenset()
        # Plain names match any part of the path: one in the folder's own path excludes all it holds.
        self._every = bool(prefix and self._names and not self._names.isdisjoint(prefix.split("/")))
        self._spec = compiled_patterns(patterns) if self._names is None else None

    def excludes(self, name: str, is_dir: bool) -> bool:
        """Whether the entry ``name`` of the folder is excluded by patterns or by ``.gitignore``."""
        if self._names is not None:
            if self._every or name in self._names:
                return True
        elif self._spec is not None:
            relative = name if self.prefix is None else self.prefix + name
            if self._spec.match_file(relative + "/" if is_dir else relative):
                return True
        if self._ignores is None:
            return False
        relative = name + "/" if is_dir else name
        for spec, prefix in self._ignores:
            decision = spec.check_file(prefix + relative).include
            if decision is not None:
                return decision
        return False


@lru_cache(maxsize=1024)
def _load_spec(path: Path, stamp: tuple[int, int]) -> pathspec.PathSpec:
    lines = read_source_file(path).decode("utf-8", "replace").splitlines()
    return gitignore_spec(line for line in lines if pattern_error(line) is None)


def _spec(path: Path) -> pathspec.PathSpec | None:
    try:
        info = path.stat()
        return _load_spec(path, (info.st_mtime_ns, info.st_size))
    except OSError:
        return None


class GitIgnores:
    """What git ignores: nested ``.gitignore`` files (the deepest that decides wins) and
    ``.git/info/exclude``, within the repository holding a path (nothing outside a repository).

    Folder look-ups are remembered for the life of the object (one run).
    """

    def __init__(self) -> None:
        self._folders: dict[Path, tuple[bool, _Sources]] = {}

    def _sources_for(self, folder: Path, listing: Listing | None = None) -> tuple[bool, _Sources]:
        """Whether ``folder`` is inside a repository, and its ignore files, deepest first
        (``listing``: what ``folder`` holds, if known)."""
        found = self._folders.get(folder)
        if found is None:
            own = _spec(folder / ".gitignore") if listing is None or listing.may_hold(".gitignore") else None
            sources: _Sources = ((own, folder),) if own else ()
            if (listing is None or listing.may_hold(".git")) and (folder / ".git").exists():
                exclude = _spec(folder / ".git" / "info" / "exclude")
                found = (True, sources + (((exclude, folder),) if exclude else ()))
            elif folder.parent == folder:
                found = (False, ())
            else:
                in_repository, above = self._sources_for(folder.parent)
                found = (in_repository, sources + above)
            self._folders[folder] = found
        return found

    def prefixes(self, folder: Path, listing: Listing | None = None) -> _Prefixed | None:
        """The ignore files that decide for the entries of the absolute ``folder``, with the
        folder's path relative to each; None outside a repository."""
        in_repository, sources = self._sources_for(folder, listing)
        if not in_repository:
            return None
        return tuple((spec, "" if base == folder else folder.relative_to(base).as_posix() + "/")
                     for spec, base in sources)
