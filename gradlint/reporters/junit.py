"""JUnit XML: one test suite per file, one failing test case per finding."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TextIO

from gradlint.diagnostics import Diagnostic
from gradlint.reporters.model import location, shown_path


def render_junit(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """A ``<testsuites>`` document; a clean run is one passing test case."""
    root = ET.Element("testsuites", name="gradlint", tests=str(max(len(diagnostics), 1)),
                      failures=str(len(diagnostics)), errors="0")
    by_path: dict[str, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        by_path.setdefault(diagnostic.path, []).append(diagnostic)
    if not by_path:
        suite = ET.SubElement(root, "testsuite", name="gradlint", tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name="No problems found", classname="gradlint")
    for raw, found in by_path.items():
        path = shown_path(raw)
        suite = ET.SubElement(root, "testsuite", name=path, tests=str(len(found)), failures=str(len(found)),
                              errors="0")
        for d in found:
            case = ET.SubElement(suite, "testcase", name=f"{location(d)}: {d.code} {d.name}", classname=path,
                                 file=path, line=str(d.line))
            failure = ET.SubElement(case, "failure", message=d.message, type=d.code)
            failure.text = f"{location(d)}: {d.code} {d.message}" + (f"\n{d.detail}" if d.detail else "")
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
