"""The language server's pure parts (position conversion, noqa edits, the fix-all edit) and
its command without the ``lsp`` extra."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import gradlint.lsp
from gradlint.cli import main
from gradlint.diagnostics import Span
from gradlint.lsp.noqa import LineEdit, add_code, code_at
from gradlint.lsp.positions import UTF8, UTF16, UTF32, Point, from_client, span_to_client, to_client

LINES = ['x = "\U0001F600é"; f(a)', "", "end"]


@pytest.mark.parametrize(("encoding", "column"), [(UTF16, 11), (UTF8, 14), (UTF32, 10)])
def test_code_point_columns_become_code_units(encoding: str, column: int):
    # f is code point 11 (1-based): after an astral emoji (2 UTF-16 units, 4 UTF-8 bytes) and é.
    assert LINES[0][10] == "f"
    assert to_client(LINES, 1, 11, encoding) == Point(0, column)
    assert from_client(LINES, Point(0, column), encoding) == (0, 10)


def test_positions_are_clamped_into_the_text():
    assert to_client(LINES, 9, 4) == Point(2, 3)
    assert to_client(LINES, 1, 99) == Point(0, 15)
    assert from_client(LINES, Point(7, 0)) == (2, 3)
    assert from_client(LINES, Point(0, 99)) == (0, 14)
    start, end = span_to_client(LINES, Span(3, 2, 3, 1))
    assert (start, end) == (Point(2, 1), Point(2, 1))  # never an end before the start


def test_noqa_is_appended_after_the_code():
    source = "a = 1\nclip(p, 1.0)   \nb = 2\n"
    assert add_code(source, 1, "GL101") == LineEdit(1, 12, 15, "  # noqa: GL101")


def test_noqa_extends_an_existing_code_list_and_keeps_other_comments():
    source = "clip(p)  # keep  # noqa: E501,GL102 trailing\n"
    edit = add_code(source, 0, "GL101")
    assert edit == LineEdit(0, 35, 35, ", GL101")
    line = source.split("\n")[0]
    assert line[:edit.start] + edit.content + line[edit.end:] == "clip(p)  # keep  # noqa: E501,GL102, GL101 trailing"


@pytest.mark.parametrize("comment", ["# noqa", "# noqa: GL101", "# NOQA:gl101", "# gradlint: ignore[GL101]",
                                     "# gradlint: ignore"])
def test_nothing_to_add_when_the_line_already_suppresses_the_code(comment: str):
    assert add_code(f"clip(p)  {comment}\n", 0, "GL101") is None


def test_a_hash_in_a_string_is_not_a_comment():
    source = 'clip(p, "#noqa: GL102")\n'
    assert add_code(source, 0, "GL101") == LineEdit(0, 23, 23, "  # noqa: GL101")


def test_no_comment_inside_a_multi_line_string():
    source = 'f("""start\nmiddle\n""")\n'
    assert add_code(source, 0, "GL101") is None
    assert add_code(source, 2, "GL101") == LineEdit(2, 4, 4, "  # noqa: GL101")


def test_crlf_line_endings_stay():
    assert add_code("clip(p)\r\nx = 1\r\n", 0, "GL101") == LineEdit(0, 7, 7, "  # noqa: GL101")


@pytest.mark.parametrize(("column", "code"), [(10, None), (17, "GL101"), (21, "GL101"), (22, None),
                                               (24, "GL102"), (32, None), (56, "GL303")])
def test_code_under_the_cursor(column: int, code: str | None):
    line = "clip(p)  # noqa: GL101, GL102, E501 # gradlint: ignore[GL303]"
    assert (line.index("GL101"), line.index("E501"), line.index("GL303")) == (17, 31, 55)
    assert code_at(line, column) == code


def test_foreign_codes_have_no_document():
    assert code_at("x  # noqa: E501", 12) is None


def test_fix_all_edit_replaces_only_the_changed_lines():
    types = pytest.importorskip("lsprotocol.types")
    from gradlint.lsp.convert import whole_text_edit

    old = "a\nb\nc\nd\n"
    edit = whole_text_edit(old, "a\nB\nC\nd\n", UTF16)
    assert edit.range == types.Range(types.Position(1, 0), types.Position(3, 0))
    assert edit.new_text == "B\nC\n"
    edit = whole_text_edit(old, "a\nd\n", UTF16)
    assert edit.range == types.Range(types.Position(1, 0), types.Position(3, 0))
    assert edit.new_text == ""


@pytest.mark.parametrize(("old", "new", "start", "end", "content"), [
    ("a\r\nb\r\nc", "a\r\nB\r\nc", 1, (2, 0), "B\r\n"),
    ("a\rb\rc", "a\rb\rC\u00e9", 2, (2, 1), "C\u00e9"),
    ("x\x0c = 1\nb\n", "x\x0c = 1\nB\n", 1, (2, 0), "B\n"),
    ("a\u2028b\nc\n", "a\u2028b\nC\n", 1, (2, 0), "C\n"),
], ids=["crlf", "lone-cr-last-line", "form-feed", "line-separator"])
def test_fix_all_edit_counts_lines_like_an_lsp_client(old: str, new: str, start: int, end: tuple[int, int],
                                                      content: str):
    """Lines end at ``\\n``, ``\\r\\n`` and ``\\r`` only, each kept in the edit as it is."""
    from gradlint.lsp.convert import whole_text_edit

    edit = whole_text_edit(old, new, UTF16)
    assert (edit.range.start.line, edit.range.start.character) == (start, 0)
    assert (edit.range.end.line, edit.range.end.character) == end
    assert edit.new_text == content


def test_without_the_extra_the_command_says_what_to_install(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(gradlint.lsp, "find_spec", lambda name: None if name == "pygls" else object())
    result = CliRunner().invoke(main, ["lsp"])
    assert result.exit_code == 2
    assert result.output == "gradlint: error: the language server needs pygls: pip install 'torch-gradlint[lsp]'\n"
