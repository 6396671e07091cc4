"""The clip functions of ``torch.nn.utils``, wrapped while at least one watch is active.

``clip_grad_norm_`` is seen however it was imported: besides the public names, the module-level
helper it calls (``torch.nn.utils.clip_grad._clip_grads_with_norm_``, torch 2.6 and later) is
wrapped. ``clip_grad_value_`` is seen through ``torch.nn.utils.clip_grad_value_`` and
``torch.nn.utils.clip_grad.clip_grad_value_``, not through a name imported before the watch began.
A clip with an infinite bound (``clip_grad_norm_(params, float("inf"))``, a common way to log the
norm) changes nothing and is not reported.
"""

from __future__ import annotations

import functools
import math
import types
from collections.abc import Callable
from typing import Any

from gradlint.runtime.sites import user_site

Listener = Callable[[Any, list[Any]], None]
"""Called with the call site and the list of clipped parameters."""

_listeners: list[Listener] = []
_saved: list[tuple[Any, str, Any]] = []
_depth = 0


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def clip(parameters: Any, *args: Any, **kwargs: Any) -> Any:
        global _depth
        import torch

        params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
        passed = (p for p in params) if isinstance(parameters, types.GeneratorType) else params
        bound = args[0] if args else kwargs.get("max_norm", kwargs.get("clip_value"))
        if _depth == 0 and not _unbounded(bound):  # a clip at infinity only measures the norm
            site = user_site()
            for listener in list(_listeners):
                listener(site, params)
        _depth += 1
        try:
            return original(passed, *args, **kwargs)
        finally:
            _depth -= 1

    return clip


def _unbounded(bound: Any) -> bool:
    try:
        return bound is not None and math.isinf(float(bound))
    except (TypeError, ValueError, RuntimeError):
        return False


def add_listener(listener: Listener) -> None:
    """Start reporting clips to ``listener``; the first listener installs the wrappers."""
    if not _listeners:
        import torch.nn.utils
        import torch.nn.utils.clip_grad as clip_grad

        names = [(torch.nn.utils, "clip_grad_norm_"), (torch.nn.utils, "clip_grad_value_"),
                 (clip_grad, "clip_grad_norm_"), (clip_grad, "clip_grad_value_"),
                 (torch.nn.utils, "clip_grads_with_norm_"), (clip_grad, "_clip_grads_with_norm_")]
        for module, name in names:
            if hasattr(module, name):
                original = getattr(module, name)
                _saved.append((module, name, original))
                setattr(module, name, _wrap(original))
    _listeners.append(listener)


def remove_listener(listener: Listener) -> None:
    """Stop reporting to ``listener``; the last one out restores torch's functions."""
    if listener in _listeners:
        _listeners.remove(listener)
    if not _listeners:
        while _saved:
            module, name, original = _saved.pop()
            setattr(module, name, original)
