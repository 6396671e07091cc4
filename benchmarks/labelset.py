"""The label files of the labelled real-code benchmark (``benchmarks/labelled/labels/``):
their schema, loading and validation.  The format is described in
``benchmarks/labelled/FORMAT.md``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

HERE = Path(__file__).resolve().parent
LABELS_DIR = HERE / "labelled" / "labels"
RULES_README = HERE.parent / "rules" / "README.md"

CATALOGUE_II: tuple[str, ...] = (
    "GL106", "GL107", "GL109", "GL205", "GL206", "GL306", "GL307",
    "GL404", "GL405", "GL406", "GL407", "GL501", "GL502",
)
"""Codes of the rule contract's second catalogue that may lack a rule document."""

STYLES: frozenset[str] = frozenset({
    "script", "class-trainer", "nested-micro-loop", "counted-gate", "while-counter", "plain",
    "accelerate", "fabric", "lightning", "deepspeed", "hf-trainer", "amp", "ddp", "gan", "rl",
    "diffusion", "speech", "detection", "llm-finetune", "multi-optimizer", "closure",
    "callback/hook", "other",
})
VERDICTS: tuple[str, ...] = ("correct", "defective", "unsure")
ANCHORS: tuple[str, ...] = ("forward", "scale", "backward", "gate", "unscale", "clip", "step",
                            "scheduler", "zero_grad", "no_sync", "counter")
DISTS: tuple[str, ...] = ("sdist", "wheel")

_TOP_KEYS = {"package": True, "version": True, "dist": False, "project": True,
             "labelled_by": False, "files": True, "loops": True, "notes": False}
_LOOP_KEYS = {"id": True, "path": True, "function": True, "lines": True, "style": True,
              "accumulates": True, "n": False, "boundary": False, "verdict": True,
              "defects": False, "anchors": False, "notes": False}
_DEFECT_KEYS = {"code": True, "line": True, "why": True, "path": False}


class LabelError(Exception):
    """A label file that breaks the format; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Defect:
    """One labelled defect: the code and the line the rule must report."""

    code: str
    line: int
    path: str
    why: str


@dataclass(frozen=True)
class Loop:
    """One labelled training loop."""

    id: str
    path: str
    function: str
    first: int
    last: int
    style: tuple[str, ...]
    accumulates: bool
    verdict: str
    defects: tuple[Defect, ...]
    anchors: Mapping[str, int | None]
    n: str | None = None

    def contains(self, path: str, line: int) -> bool:
        """Whether ``path:line`` lies inside this loop."""
        return path == self.path and self.first <= line <= self.last


@dataclass(frozen=True)
class LabelFile:
    """One package's labels."""

    source: Path
    package: str
    version: str
    dist: str
    project: str
    files: tuple[str, ...]
    loops: tuple[Loop, ...] = field(default=())

    @property
    def slug(self) -> str:
        """``package-version``: the folder the package is unpacked to."""
        return f"{self.package}-{self.version}"


def known_codes(readme: Path = RULES_README) -> frozenset[str]:
    """The rule codes of the rules README's table plus the second catalogue."""
    try:
        text = readme.read_text(encoding="utf-8")
    except OSError:
        text = ""
    table = re.findall(r"^\|\s*\[?(GL\d{3})\]?", text, flags=re.MULTILINE)
    if not table:
        raise LabelError([f"{readme}: no rule table to check the codes against"])
    return frozenset(table) | frozenset(CATALOGUE_II)


def _keys(obj: Mapping[str, Any], spec: Mapping[str, bool], where: str) -> list[str]:
    problems = [f"{where}: missing key {k!r}" for k, req in spec.items() if req and k not in obj]
    problems += [f"{where}: unknown key {k!r}" for k in obj if k not in spec]
    return problems


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _rel_path(value: object) -> bool:
    if not isinstance(value, str) or not value or "\\" in value:
        return False
    path = PurePosixPath(value)
    return not path.is_absolute() and ".." not in path.parts


def _check_defect(raw: object, where: str, codes: frozenset[str],
                  files: set[str]) -> list[str]:
    if not isinstance(raw, dict):
        return [f"{where}: a defect must be an object"]
    problems = _keys(raw, _DEFECT_KEYS, where)
    code = raw.get("code")
    if "code" in raw and code not in codes:
        problems.append(f"{where}: unknown rule code {code!r}")
    if "line" in raw and (not _is_int(raw["line"]) or raw["line"] < 1):
        problems.append(f"{where}: 'line' must be a positive integer")
    if "why" in raw and not isinstance(raw["why"], str):
        problems.append(f"{where}: 'why' must be a string")
    if "path" in raw and raw["path"] not in files:
        problems.append(f"{where}: defect path {raw['path']!r} is not in 'files'")
    return problems


def _check_loop(raw: object, where: str, codes: frozenset[str], files: set[str]) -> list[str]:
    if not isinstance(raw, dict):
        return [f"{where}: a loop must be an object"]
    problems = _keys(raw, _LOOP_KEYS, where)
    for key in ("id", "function"):
        if key in raw and not (isinstance(raw[key], str) and raw[key]):
            problems.append(f"{where}: {key!r} must be a non-empty string")
    if "path" in raw and raw["path"] not in files:
        problems.append(f"{where}: loop path {raw['path']!r} is not in 'files'")
    lines = raw.get("lines")
    lines_ok = (isinstance(lines, list) and len(lines) == 2 and all(map(_is_int, lines))
                and 1 <= lines[0] <= lines[1])
    if "lines" in raw and not lines_ok:
        problems.append(f"{where}: 'lines' must be [first, last] with 1 <= first <= last")
    style = raw.get("style")
    if "style" in raw:
        if not isinstance(style, list) or not all(isinstance(s, str) for s in style):
            problems.append(f"{where}: 'style' must be a list of strings")
        else:
            problems += [f"{where}: unknown style {s!r}" for s in style if s not in STYLES]
    if "accumulates" in raw and not isinstance(raw["accumulates"], bool):
        problems.append(f"{where}: 'accumulates' must be true or false")
    for key in ("n", "boundary", "notes"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            problems.append(f"{where}: {key!r} must be a string or null")
    verdict = raw.get("verdict")
    if "verdict" in raw and verdict not in VERDICTS:
        problems.append(f"{where}: verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    defects = raw.get("defects", [])
    if not isinstance(defects, list):
        problems.append(f"{where}: 'defects' must be a list")
        defects = []
    for i, d in enumerate(defects):
        problems += _check_defect(d, f"{where} defect {i + 1}", codes, files)
    if verdict == "correct" and defects:
        problems.append(f"{where}: a loop labelled correct has defects")
    if verdict == "defective" and not defects:
        problems.append(f"{where}: a loop labelled defective lists no defect")
    anchors = raw.get("anchors", {})
    if not isinstance(anchors, dict):
        return [*problems, f"{where}: 'anchors' must be an object"]
    for name, line in anchors.items():
        if name not in ANCHORS:
            problems.append(f"{where}: unknown anchor {name!r}")
        elif line is not None and not _is_int(line):
            problems.append(f"{where}: anchor {name!r} must be a line number or null")
        elif line is not None and isinstance(lines, list) and lines_ok \
                and not lines[0] <= line <= lines[1]:
            problems.append(f"{where}: anchor {name!r} line {line} is outside lines "
                            f"{lines[0]}-{lines[1]}")
    return problems


def check_raw(raw: object, source: Path, codes: frozenset[str]) -> list[str]:
    """Every schema problem of one parsed label file, one line each."""
    where = source.name
    if not isinstance(raw, dict):
        return [f"{where}: the top level must be an object"]
    problems = _keys(raw, _TOP_KEYS, where)
    for key in ("package", "version", "project"):
        if key in raw and not (isinstance(raw[key], str) and raw[key]):
            problems.append(f"{where}: {key!r} must be a non-empty string")
    package = raw.get("package")
    if isinstance(package, str) and package != source.stem:
        problems.append(f"{where}: package {package!r} does not match the file name")
    if isinstance(package, str) and package != package.lower():
        problems.append(f"{where}: package {package!r} must be lower case")
    if raw.get("dist", "sdist") not in DISTS:
        problems.append(f"{where}: 'dist' must be one of {', '.join(DISTS)}")
    files = raw.get("files")
    if "files" in raw and (not isinstance(files, list) or not files
                           or not all(_rel_path(f) for f in files)):
        problems.append(f"{where}: 'files' must be a non-empty list of relative paths")
        files = []
    file_set = set(files or [])
    loops = raw.get("loops")
    if "loops" in raw and not isinstance(loops, list):
        return [*problems, f"{where}: 'loops' must be a list"]
    seen: set[str] = set()
    for i, loop in enumerate(loops or []):
        loop_id = loop.get("id") if isinstance(loop, dict) else None
        label = f"{where} loop {loop_id or i + 1}"
        problems += _check_loop(loop, label, codes, file_set)
        if isinstance(loop_id, str):
            if loop_id in seen:
                problems.append(f"{label}: duplicate loop id")
            seen.add(loop_id)
    return problems


def _build(raw: dict[str, Any], source: Path) -> LabelFile:
    loops = []
    for lp in raw["loops"]:
        anchors = {name: lp.get("anchors", {}).get(name) for name in ANCHORS}
        defects = tuple(Defect(d["code"], d["line"], d.get("path", lp["path"]), d["why"])
                        for d in lp.get("defects", []))
        loops.append(Loop(lp["id"], lp["path"], lp["function"], lp["lines"][0], lp["lines"][1],
                          tuple(lp["style"]), lp["accumulates"], lp["verdict"], defects,
                          anchors, lp.get("n")))
    return LabelFile(source, raw["package"], raw["version"], raw.get("dist", "sdist"),
                     raw["project"], tuple(raw["files"]), tuple(loops))


def load(paths: Iterable[Path], codes: frozenset[str] | None = None) -> list[LabelFile]:
    """Parse and check label files; raise :class:`LabelError` listing every problem."""
    codes = known_codes() if codes is None else codes
    problems: list[str] = []
    labels: list[LabelFile] = []
    for path in paths:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{path.name}: cannot read: {exc}")
            continue
        except json.JSONDecodeError as exc:
            problems.append(f"{path.name}: invalid JSON: {exc.msg} at line {exc.lineno}")
            continue
        found = check_raw(raw, path, codes)
        problems += found
        if not found:
            labels.append(_build(raw, path))
    if problems:
        raise LabelError(problems)
    return labels


def label_paths(directory: Path, only: Iterable[str] = ()) -> list[Path]:
    """The label files of ``directory`` (only the packages ``only`` when given)."""
    wanted = set(only)
    paths = sorted(directory.glob("*.json"))
    return [p for p in paths if not wanted or p.stem in wanted]


def check_sources(labels: LabelFile, root: Path) -> list[str]:
    """Problems of the labels against the unpacked package at ``root``: files that
    are missing and line numbers past the end of their file."""
    where = labels.source.name
    problems: list[str] = []
    sizes: dict[str, int] = {}
    for rel in labels.files:
        try:
            sizes[rel] = len((root / rel).read_bytes().splitlines())
        except OSError:
            problems.append(f"{where}: file {rel!r} is not in {labels.slug}")
    for loop in labels.loops:
        size = sizes.get(loop.path)
        if size is not None and loop.last > size:
            problems.append(f"{where} loop {loop.id}: lines end at {loop.last}, past the end "
                            f"of {loop.path} ({size} lines)")
        for d in loop.defects:
            dsize = sizes.get(d.path)
            if dsize is not None and d.line > dsize:
                problems.append(f"{where} loop {loop.id}: defect line {d.line} is past the end "
                                f"of {d.path} ({dsize} lines)")
    return problems
