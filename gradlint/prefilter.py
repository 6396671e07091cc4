"""The text tests: might this file, or this unit of it, hold a training loop or a suppression?

Every shortcut that decides from the text alone what the analysis may skip lives here:

* :func:`worth_reading` on a file's raw bytes (no decoding): a file that fails it has no
  diagnostic at all, not even a syntax error (GL000). The runner asks it once per file (its
  answer is remembered in the cache's file index under :func:`filter_flavour`).
* :func:`judge` on the text to analyse: a :class:`Verdict` that the engine follows without
  testing the text again (the runner and the language server ask it once per text).
* :class:`UnitFilter` on the units the ``ast`` screen found: which of them can form a loop.

None of these changes a result, only the work done: tests/test_fast_path.py compares the
fast path with the full analysis, which skips every one of them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gradlint.catalogue import UNUSED_SUPPRESSION
from gradlint.settings import Settings

if TYPE_CHECKING:
    from gradlint.screen import ModuleFacts, Unit

NATIVE_SCALER = "loss_scaler("  # timm / MAE / DeiT: `loss_scaler(loss, optimizer, update_grad=...)`
LOSS_HOOK = "compute_loss"  # the HF Trainer's hook (`def compute_loss`, `compute_loss_func=`)
_HINT = re.compile(r"noqa|gradlint", re.IGNORECASE)
_IDENTIFIER = re.compile(r"\w+")
_METHOD_ALIAS = re.compile(r"\bself\.(\w+)\s*=\s*self\.(\w+)\b")


_BACKWARD_USE = r"backward\s*\(|\.\s*backward\b|\bbackward\s*[,)=]|import[^\n]*\bbackward\b"
"""``backward`` written as code can be read as: called or defined (``backward(``), an attribute
(``loss.backward``, ``torch.autograd.backward``), imported (``from torch.autograd import
backward``, also in a parenthesised list) or bound. Prose such as "backward compatibility" is none."""
_BACKWARD_TEXT = re.compile(_BACKWARD_USE, re.ASCII)  # the bytes pattern's answer on latin-1 text
_BACKWARD_BYTES = re.compile(_BACKWARD_USE.encode())


def might_hold_training_loop(text: str) -> bool:
    """A text with no ``backward`` used as code, no ``.step(`` and no ``loss_scaler(`` (timm's
    fused backward-and-step) cannot hold a training loop, nor, without ``compute_loss``, a loss
    hook of a framework's loop (the HF Trainer's)."""
    return (".step(" in text or NATIVE_SCALER in text or LOSS_HOOK in text
            or ("backward" in text and _BACKWARD_TEXT.search(text) is not None))


def might_hold_training_loop_bytes(data: bytes) -> bool:
    """:func:`might_hold_training_loop` on raw file bytes, without decoding them: the same
    answer as on ``data.decode("latin-1")`` (which maps each byte to one character)."""
    return (b".step(" in data or NATIVE_SCALER.encode() in data or LOSS_HOOK.encode() in data
            or (b"backward" in data and _BACKWARD_BYTES.search(data) is not None))


def might_hold_suppression(text: str) -> bool:
    """Whether ``text`` can hold a suppression comment at all (``noqa`` or ``gradlint``, in
    any case; an ASCII text is searched lower-cased, the same answer faster)."""
    if text.isascii():
        lowered = text.lower()
        return "noqa" in lowered or "gradlint" in lowered
    return _HINT.search(text) is not None


def could_form_loop(text: str) -> bool:
    """Whether ``text`` can hold a training loop: one needs a step call and a backward call.

    ``build_loops`` makes a loop only of a scope with a BACKWARD and a STEP event
    (``gradlint/model/calls.py``): STEP comes from a ``.step(...)`` call whose attribute libcst
    reads as written, so ``step`` is in the text; BACKWARD from ``.backward`` /
    ``.manual_backward`` or a name imported as ``torch.autograd.backward``, whose import may
    spell ``backward`` with compatibility characters that Python's parser normalises (NFKC).
    """
    if NATIVE_SCALER in text:
        return True  # backward and step in one call
    if "step" not in text:
        return False
    return "backward" in text or (not text.isascii() and "backward" in unicodedata.normalize("NFKC", text))


_UPDATE_WORDS = ("clip", "grad", "unscale_")
"""What a second event of an update needs in its text: a clip (``clip_grad_norm_``,
``clip_gradients``), a zeroing (``zero_grad``, ``clear_grad``, ``p.grad = None``,
``p.grad.zero_()``) or an unscale; a scheduler's step is a second ``step``."""


def could_update(text: str) -> bool:
    """Whether ``text`` can hold an update scope (:mod:`gradlint.model.update_scope`): a step
    and another event of the update (a second step, a clip, a zeroing, an unscale)."""
    return text.count("step") > 1 or ("step" in text and any(word in text for word in _UPDATE_WORDS))


def suppressions_wanted(settings: Settings) -> bool:
    """Whether unused suppressions (GL900) are reported: then a suppression alone makes a
    file worth analysing."""
    return settings.enabled(UNUSED_SUPPRESSION.code)


def worth_reading(data: bytes, settings: Settings) -> bool:
    """Whether file bytes pass the text filters; a file that doesn't has no diagnostic at all.

    Searches the bytes (no decoding) first: it is the answer on ``data.decode("latin-1")``.
    """
    if might_hold_training_loop_bytes(data):
        return True
    return suppressions_wanted(settings) and might_hold_suppression(data.decode("latin-1"))


def filter_flavour(settings: Settings) -> str:
    """The part of ``settings`` that :func:`worth_reading` depends on: its answers for one
    file's bytes can be remembered under this name."""
    return "suppressions" if suppressions_wanted(settings) else "training"


@dataclass(frozen=True)
class Verdict:
    """What the text tests say about one text, asked once and followed by the engine.

    ``training``: it has training words, so it is analysed (and its syntax judged: GL000);
    ``loop``: it also has a step and a backward call, or imports (a helper of the project may
    bring the other), so a loop can form (without it the syntax is judged, nothing else);
    ``suppressions``: it may hold a suppression comment.
    """

    training: bool
    loop: bool
    suppressions: bool

    def worth(self, settings: Settings) -> bool:
        """Whether any diagnostic can come of the text under ``settings``."""
        return self.training or (self.suppressions and suppressions_wanted(settings))


EVERYTHING = Verdict(training=True, loop=True, suppressions=True)
"""The verdict that skips nothing (the full analysis)."""


def judge(text: str) -> Verdict:
    """The :class:`Verdict` on ``text``."""
    training = might_hold_training_loop(text)
    # a module without a step or a backward of its own may reach one in a module it imports
    loop = training and (could_form_loop(text) or could_update(text) or "import" in text)
    return Verdict(training, loop, might_hold_suppression(text))


class UnitFilter:
    """Which units can form a training loop: :func:`could_form_loop` for one unit's lines,
    where a call can stand in for the step or the backward call.

    The model follows calls into the module's training functions (``UnitLibrary.resolve``),
    so a function whose text holds ``step`` (or calls one that does, and so on) may bring a
    STEP into its caller, and likewise for ``backward``, which a local alias of
    ``torch.autograd.backward`` also spells. libcst reads names as written, so a name counts
    when the unit's text holds it as an identifier.
    """

    def __init__(self, lines: list[str], units: Iterable[Unit], facts: ModuleFacts) -> None:
        self._lines = lines
        texts: dict[str, str] = {}
        for unit in units:
            if unit.name != "<module>":
                texts[unit.name] = texts.get(unit.name, "") + self._text(unit)
        idents = {name: frozenset(_IDENTIFIER.findall(text)) for name, text in texts.items()}
        for attribute, method in _METHOD_ALIAS.findall("".join(lines)):  # `self.fwd_bwd = self._fwd_bwd` (in any method)
            idents[attribute] = idents.get(attribute, frozenset()) | {method}
        aliases = {local for local, target in facts.aliases.items() if target.rsplit(".", 1)[-1] == "backward"}
        self._steppers = _spreading(texts, idents, ("step", NATIVE_SCALER), set())
        self._backwards = _spreading(texts, idents, ("backward", NATIVE_SCALER), aliases)
        self._updaters = _spreading(texts, idents, ("step", *_UPDATE_WORDS), set())

    def _text(self, unit: Unit) -> str:
        return "".join(self._lines[unit.start_line - 1 : unit.end_line])

    def could_form_loop(self, unit: Unit) -> bool:
        """Whether ``unit`` may hold a loop with a step and a backward call, its own or a helper's."""
        body = self._text(unit)
        if NATIVE_SCALER in body:
            return True
        names = frozenset(_IDENTIFIER.findall(body))
        return ("step" in body or bool(names & self._steppers)) and ("backward" in body or bool(names & self._backwards))

    def could_update(self, unit: Unit) -> bool:
        """Whether ``unit`` may be an update scope: :func:`could_update` for its text, where a
        call of a function that may bring a step (or another event of the update) along stands
        in for it."""
        body = self._text(unit)
        names = frozenset(_IDENTIFIER.findall(body)) - {unit.name}
        if could_update(body):
            return True
        return ("step" in body or bool(names & self._steppers)) and bool(names & self._updaters)

    def names_any(self, unit: Unit, names: frozenset[str]) -> bool:
        """Whether ``unit``'s text holds one of ``names`` as an identifier (a call that may
        reach a training function of another module of the project)."""
        return bool(names) and not names.isdisjoint(_IDENTIFIER.findall(self._text(unit)))


def _spreading(texts: dict[str, str], idents: dict[str, frozenset[str]], words: tuple[str, ...],
               seed: set[str]) -> frozenset[str]:
    """Names whose call may bring one of ``words`` along: the seed, the functions whose text
    holds a word, then the functions that name one of those, until nothing changes."""
    found = seed | {name for name, text in texts.items() if any(word in text for word in words)}
    changed = True
    while changed:
        grown = {name for name, names in idents.items() if name not in found and names & found}
        found |= grown
        changed = bool(grown)
    return frozenset(found)
