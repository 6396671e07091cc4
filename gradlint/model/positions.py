"""Syntactic positions of a libcst tree in one code generation pass.

``MetadataWrapper.resolve(PositionProvider)`` computes the same mapping, then, having no
batchable provider left, still visits the whole tree once with an empty batch of visitors:
on the units of a real project that idle visit cost as much as the positions themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import libcst as cst
from libcst.metadata import CodeRange, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState


def positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """Each node of ``module`` -> its range as :class:`PositionProvider` reports it
    (whitespace that is not syntactically significant left out)."""
    provider = PositionProvider()
    state = PositionProvidingCodegenState(default_indent=module.default_indent,
                                          default_newline=module.default_newline,
                                          provider=provider)
    module._codegen(state)
    return cast("Mapping[cst.CSTNode, CodeRange]", provider._computed)  # ranges only: no lazy values
