"""Writes lose nothing (issue 18, point 2): owner and group, mode, extended attributes, hard
links, a write that lands while the file is fixed, temporaries of a killed run."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from samples import BAD, gradlint

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


# -- through the command line: --fix and --add-noqa ---------------------------------------

CLIP = "            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n"
CLIP_MOVED = "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n"
STEP = "        optimizer.step()\n"
SCHEDULER = "            scheduler.step()\n"


def _cli(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradlint", "check", "--no-cache", "--format", "concise", *args],
                          cwd=folder, capture_output=True, text=True, timeout=120, check=False)


def _with_endings(text: str, crlf_lines: range) -> bytes:
    """``text`` with CRLF ending the lines (0-based) in ``crlf_lines``, LF the others."""
    lines = text.split("\n")
    return "".join(line + ("\r\n" if index in crlf_lines else "\n") for index, line in enumerate(lines[:-1])).encode() \
        + lines[-1].encode()


@pytest.mark.parametrize("crlf", [range(0, 6), range(6, 99), range(11, 14)],
                         ids=["crlf-head-lf-loop", "lf-head-crlf-loop", "crlf-from-the-clip-to-the-step"])
def test_a_moved_line_takes_the_line_ending_of_its_new_neighbours(tmp_path: Path, crlf: range) -> None:
    """In a file of mixed line endings the clip (line 12) moves to just before
    ``optimizer.step()`` (line 14): it ends like the line it now precedes."""
    (tmp_path / "train.py").write_bytes(_with_endings(BAD, crlf))
    done = _cli(tmp_path, "--fix", "train.py")
    assert done.returncode == 1, done.stderr  # GL104 remains (its fix is unsafe)
    lines = [(line, b"\r\n" if index in crlf else b"\n") for index, line in enumerate(BAD.split("\n")[:-1])]
    assert lines[11][0] + "\n" == CLIP and lines[13][0] + "\n" == STEP
    step_ending = lines[13][1]
    del lines[11]
    lines.insert(12, (CLIP_MOVED.rstrip("\n"), step_ending))
    assert (tmp_path / "train.py").read_bytes() == b"".join(line.encode() + end for line, end in lines)


@pytest.mark.parametrize("args", [["--fix"], ["--fix", "--unsafe-fixes"], ["--add-noqa"]],
                         ids=["fix", "unsafe-fix", "add-noqa"])
def test_a_missing_final_newline_stays_missing(tmp_path: Path, args: list[str]) -> None:
    """Also when a fix inserts after the last line: with ``--unsafe-fixes`` the scheduler
    step moves after ``optimizer.step()``, the last line here."""
    text = BAD.replace("        optimizer.zero_grad()\n", "").rstrip("\n")
    assert text.endswith("optimizer.step()")
    (tmp_path / "train.py").write_text(text)
    done = _cli(tmp_path, *args, "train.py")
    assert "Traceback" not in done.stderr
    after = (tmp_path / "train.py").read_text()
    assert after != text and not after.endswith("\n"), after
    if "--unsafe-fixes" in args:
        assert after.endswith("        optimizer.step()\n        scheduler.step()")
    elif "--add-noqa" in args:
        assert after.count("  # noqa: ") >= 2


ACL = "system.posix_acl_access"
ACL_USER_4321_RW = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, uid) for tag, perm, uid in (
    (0x01, 6, 0xFFFFFFFF), (0x02, 6, 4321), (0x04, 4, 0xFFFFFFFF), (0x10, 6, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF)))
"""user::rw-, user:4321:rw-, group::r--, mask::rw-, other::--- in the kernel's xattr form."""


@pytest.mark.parametrize("args", [["--fix"], ["--add-noqa"]], ids=["fix", "add-noqa"])
def test_fix_and_add_noqa_keep_mode_owner_xattrs_acls_and_hard_links(tmp_path: Path, args: list[str]) -> None:
    path = tmp_path / "train.py"
    path.write_text(BAD)
    link = tmp_path / "same-inode.py"
    other = tmp_path / "single.py"
    other.write_text(BAD)
    os.link(path, link)
    for target in (path, other):
        target.chmod(0o640)
        if os.geteuid() == 0:
            os.chown(target, 1234, 5678)
    xattrs = True
    try:
        os.setxattr(other, "user.gradlint-test", b"kept")
    except OSError:
        xattrs = False
    try:  # an access ACL granting user 4321 rw (the xattr setfacl would write)
        os.setxattr(other, ACL, ACL_USER_4321_RW)
        acls = True
    except OSError:
        acls = False
    modes = {target: target.stat().st_mode for target in (path, other)}
    inode = path.stat().st_ino
    done = _cli(tmp_path, *args, "train.py", "single.py")
    assert "Traceback" not in done.stderr and done.returncode in (0, 1), done.stderr
    assert path.read_text() != BAD and link.read_text() == path.read_text() and other.read_text() == path.read_text()
    assert path.stat().st_ino == inode and path.stat().st_nlink == 2
    for target in (path, other):
        info = target.stat()
        assert info.st_mode == modes[target]
        if os.geteuid() == 0:
            assert (info.st_uid, info.st_gid) == (1234, 5678)
    if xattrs:
        assert os.getxattr(other, "user.gradlint-test") == b"kept"
    if acls:
        assert os.getxattr(other, ACL) == ACL_USER_4321_RW
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same-inode.py", "single.py", "train.py"]


def test_a_save_landing_while_the_cli_fixes_is_kept_and_reported(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The editor saves (a comment on top) between gradlint's read and its rename: the
    save is kept, the run says so, and the findings reported are those of the saved text."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "train.py"
    path.write_text(BAD)
    saved = "# saved by the editor\n" + BAD
    real = writer._copy_metadata

    def racing(info: os.stat_result, source: Path, temporary: str) -> None:
        real(info, source, temporary)
        path.write_text(saved)

    monkeypatch.setattr(writer, "_copy_metadata", racing)
    result = gradlint("check", "--fix", "--no-cache", "-j", "1", "--format", "concise", "train.py")
    assert result.stderr == "gradlint: warning: train.py: not fixed: file changed while it was being fixed\n"
    assert [line.split(" ")[:2] for line in result.stdout.splitlines() if line.startswith("train.py")] == [
        ["train.py:13:13:", "GL101"], ["train.py:14:13:", "GL104"]]
    assert result.exit_code == 1
    assert path.read_text() == saved
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]
