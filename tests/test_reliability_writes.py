"""Writes lose nothing (issue 18, point 2): owner and group, mode, extended attributes, hard
links, a write that lands while the file is fixed, temporaries of a killed run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gradlint.writer as writer
from gradlint.writer import TEMPORARY_SUFFIX, write_atomic

OLD = b"x = 1\n"
NEW = b"x = 2\n"


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_bytes(OLD)
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_root_keeps_the_owner_and_group(tmp_path: Path) -> None:
    path = _file(tmp_path)
    os.chown(path, 1234, 5678)
    path.chmod(0o640)
    write_atomic(path, NEW, expected=OLD)
    info = path.stat()
    assert (path.read_bytes(), info.st_uid, info.st_gid, info.st_mode & 0o7777) == (NEW, 1234, 5678, 0o640)


def test_extended_attributes_are_kept(tmp_path: Path) -> None:
    path = _file(tmp_path)
    try:
        os.setxattr(path, "user.gradlint-test", b"kept")
    except OSError as exc:
        pytest.skip(f"no user extended attributes here: {exc.strerror}")
    write_atomic(path, NEW, expected=OLD)
    assert os.getxattr(path, "user.gradlint-test") == b"kept"


def test_a_hard_linked_file_is_rewritten_in_place(tmp_path: Path) -> None:
    path = _file(tmp_path)
    other = tmp_path / "link.py"
    os.link(path, other)
    inode = path.stat().st_ino
    write_atomic(path, NEW, expected=OLD)
    assert (path.read_bytes(), other.read_bytes(), path.stat().st_ino) == (NEW, NEW, inode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.py", "train.py"]


def test_a_hard_linked_file_that_changed_is_not_overwritten(tmp_path: Path) -> None:
    path = _file(tmp_path)
    os.link(path, tmp_path / "link.py")
    path.write_bytes(b"edited\n")
    with pytest.raises(OSError, match="changed while it was being fixed"):
        write_atomic(path, NEW, expected=OLD)
    assert path.read_bytes() == b"edited\n"


def test_a_write_landing_while_the_temporary_is_written_is_detected(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The editor saves after gradlint read the file and after its first check: the check
    immediately before the rename still sees it, and nothing is left behind."""
    path = _file(tmp_path)
    real = writer._copy_metadata

    def racing(info: os.stat_result, source: Path, temporary: str) -> None:
        real(info, source, temporary)
        path.write_bytes(b"saved by the editor\n")

    monkeypatch.setattr(writer, "_copy_metadata", racing)
    with pytest.raises(OSError, match="changed while it was being fixed"):
        write_atomic(path, NEW, expected=OLD)
    assert path.read_bytes() == b"saved by the editor\n"
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]


def test_the_temporary_of_a_killed_run_is_removed_by_the_next_write(tmp_path: Path) -> None:
    path = _file(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    stale = tmp_path / f".train.py.{dead.stdout.strip()}.abc123{TEMPORARY_SUFFIX}"
    stale.write_bytes(NEW)
    live = tmp_path / f".train.py.{os.getppid()}.def456{TEMPORARY_SUFFIX}"  # a running writer's: kept
    live.write_bytes(NEW)
    unrelated = tmp_path / f".other.py.{dead.stdout.strip()}.x{TEMPORARY_SUFFIX}"
    unrelated.write_bytes(NEW)
    write_atomic(path, NEW, expected=OLD)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, unrelated.name, "train.py"])
