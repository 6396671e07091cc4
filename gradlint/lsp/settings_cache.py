"""The settings of each document: its nearest configuration, re-read when a config file changes.

A cache entry is keyed by the document's path (per-file ignores differ within a folder) and
remembers a fingerprint (size and mtime) of every configuration file that could apply, from
the document's folder up to the root.
The fingerprint is taken again on each lookup (a few ``stat`` calls), so an edited, created
or deleted config is picked up on the next lint even if the client does not report it.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from gradlint.config import CONFIG_NAMES, ConfigResolver, settings_for
from gradlint.runner import DEFAULT_MAX_FILE_SIZE
from gradlint.settings import Settings, SettingsError, default_settings

Fingerprint = tuple[tuple[str, int, int], ...]


def fingerprint(folder: Path) -> Fingerprint:
    """Size and mtime of every config file from ``folder`` up to the filesystem root."""
    found: list[tuple[str, int, int]] = []
    for directory in (folder, *folder.parents):
        for name in CONFIG_NAMES:
            try:
                stat = os.stat(directory / name)
            except OSError:
                continue
            found.append((str(directory / name), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


@dataclass(frozen=True)
class Resolved:
    """Settings for one document, its size limit in bytes (0: none), and the configuration
    error that forced the defaults."""

    settings: Settings
    error: str | None = None
    max_file_size: int = DEFAULT_MAX_FILE_SIZE


class SettingsCache:
    """Thread-safe settings per document, invalidated by config-file fingerprints."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[Path, tuple[Fingerprint, Resolved]] = {}

    def resolve(self, path: Path | None) -> Resolved:
        """Settings for a document at ``path`` (None for an unsaved buffer: the defaults)."""
        if path is None:
            return Resolved(default_settings())
        current = fingerprint(path.parent)
        with self._lock:
            cached = self._entries.get(path)
        if cached and cached[0] == current:
            return cached[1]
        try:
            resolver = ConfigResolver()
            settings = settings_for(path, resolver=resolver)
            limit = resolver.for_path(path).max_file_size
            resolved = Resolved(settings, max_file_size=DEFAULT_MAX_FILE_SIZE if limit is None else limit)
        except SettingsError as exc:
            resolved = Resolved(default_settings(), str(exc))
        with self._lock:
            self._entries[path] = (current, resolved)
        return resolved

    def clear(self) -> None:
        """Forget everything (a watched config file changed)."""
        with self._lock:
            self._entries.clear()
