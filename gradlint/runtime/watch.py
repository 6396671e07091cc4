"""``watch``: hooks on the user's optimizer, scheduler and scaler that report misplaced calls as they run.

Torch is imported when a watch starts, not when this module is imported.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

import gradlint.runtime.clipping as clipping
from gradlint.runtime.errors import Finding, Site, TrainingLoopError, TrainingLoopWarning
from gradlint.runtime.sites import skip_package, user_site
from gradlint.runtime.window import Window

_MODES = ("raise", "warn")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


class Watch:
    """A context manager that watches one or more optimizers (see ``watch``).

    ``findings`` lists what it reported: each error raised, and each warning once per code and line.
    """

    def __init__(self, optimizer: Any, *, accumulation_steps: int, scheduler: Any = None, scaler: Any = None,
                 on_violation: str = "raise") -> None:
        if isinstance(accumulation_steps, bool) or not isinstance(accumulation_steps, int) or accumulation_steps < 1:
            raise ValueError(f"accumulation_steps must be a positive int, not {accumulation_steps!r}")
        if on_violation not in _MODES:
            raise ValueError(f"on_violation must be 'raise' or 'warn', not {on_violation!r}")
        self.optimizers = _as_list(optimizer)
        if not self.optimizers:
            raise ValueError("watch() needs at least one optimizer")
        for opt in self.optimizers:
            if not hasattr(opt, "register_step_pre_hook") or not hasattr(opt, "param_groups"):
                raise TypeError(f"watch() needs torch.optim.Optimizer objects, not {type(opt).__name__}")
        self.accumulation_steps = accumulation_steps
        self.schedulers = _as_list(scheduler)
        self.scaler = scaler
        self.on_violation = on_violation
        self.findings: list[Finding] = []
        self._windows: dict[int, Window] = {}
        self._params: dict[int, list[Any]] = {}
        self._probes: dict[int, list[Any]] = {}  # the GL304 probes on an optimizer's parameters
        self._handles: list[Any] = []
        self._patches: list[tuple[Any, str, bool, Any]] = []
        self._warned: set[tuple[str, Site]] = set()
        self._active = False

    # -- entering and leaving ----------------------------------------------------------------

    def __enter__(self) -> Watch:
        if self._active:
            raise RuntimeError("this watch is already active")
        import torch

        skip_package(torch)
        self._active = True
        try:
            for index, opt in enumerate(self.optimizers):
                self._watch_optimizer(opt, index)
            for scheduler in self.schedulers:
                self._watch_scheduler(scheduler)
            if self.scaler is not None:
                self._watch_scaler(self.scaler)
            clipping.add_listener(self._on_clip)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove every hook and wrapper (also called on exit, exception or not)."""
        clipping.remove_listener(self._on_clip)
        for opt_id in list(self._probes):
            self._unprobe(opt_id)
        while self._handles:
            self._handles.pop().remove()
        while self._patches:
            obj, name, had_own, previous = self._patches.pop()
            if had_own:
                setattr(obj, name, previous)
            else:
                delattr(obj, name)
        self._active = False

    def epoch_end(self) -> None:
        """Say that a loader is exhausted: a short window just stepped was its final partial window (not GL102)."""
        for window in self._windows.values():
            window.epoch_end()

    # -- installing --------------------------------------------------------------------------

    def _patch(self, obj: Any, name: str, make: Callable[[Any], Any]) -> None:
        own = vars(obj)
        self._patches.append((obj, name, name in own, own.get(name)))
        setattr(obj, name, make(getattr(obj, name)))

    def _watch_optimizer(self, opt: Any, index: int) -> None:
        params = list({id(p): p for group in opt.param_groups for p in group["params"] if p.requires_grad}.values())
        name = type(opt).__name__ if len(self.optimizers) == 1 else f"{type(opt).__name__} (optimizer {index})"
        window = Window(name, self.accumulation_steps, frozenset(id(p) for p in params))
        self._windows[id(opt)] = window
        report = self._report

        def before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            report(window.before_step(user_site()))
            window.in_step = True

        def after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            window.in_step = False
            self._end_update(id(opt), skipped=False)

        self._handles += [opt.register_step_pre_hook(before_step), opt.register_step_post_hook(after_step)]
        self._params[id(opt)] = params
        for param in params:
            self._handles.append(param.register_post_accumulate_grad_hook(self._counter(window, id(param))))

        def wrap_zero_grad(original: Callable[..., Any]) -> Callable[..., Any]:
            def zero_grad(*args: Any, **kwargs: Any) -> Any:
                window.on_zero(user_site())
                if id(opt) in self._probes:
                    self._unprobe(id(opt))
                return original(*args, **kwargs)
            return zero_grad

        self._patch(opt, "zero_grad", wrap_zero_grad)

    def _end_update(self, opt_id: int, skipped: bool) -> None:
        """Close the window; when it went by without the optimizer's zero_grad, probe the next one (GL304)."""
        window = self._windows[opt_id]
        probe = not window.zeroed_since_update and opt_id not in self._probes
        window.after_update(skipped)
        if probe:
            self._probes[opt_id] = [p.register_hook(self._stale_probe(window, p)) for p in self._params[opt_id]]

    def _unprobe(self, opt_id: int) -> None:
        """The optimizer's zero_grad ran: its gradients start fresh, the probes are not needed."""
        for handle in self._probes.pop(opt_id, ()):
            handle.remove()

    @staticmethod
    def _counter(window: Window, key: int) -> Callable[[Any], None]:
        def accumulated(param: Any) -> None:
            window.on_accumulated(key)

        return accumulated

    @staticmethod
    def _stale_probe(window: Window, param: Any) -> Callable[[Any], None]:
        key = id(param)

        def probe(grad: Any) -> None:
            if window.wants_stale_check(key):
                held = param.grad
                stale = held is not None and bool(held._nnz() if held.is_sparse else held.any())
                window.saw_previous_gradient(key, stale)

        return probe

    def _window_of_scheduler(self, scheduler: Any) -> Window | None:
        opt = getattr(scheduler, "optimizer", None)
        if opt is not None:
            return self._windows.get(id(opt))
        return next(iter(self._windows.values())) if len(self._windows) == 1 else None

    def _watch_scheduler(self, scheduler: Any) -> None:
        window = self._window_of_scheduler(scheduler)
        if window is None:
            return
        opt = getattr(scheduler, "optimizer", None)
        key = id(scheduler)
        report = self._report

        def wrap_step(original: Callable[..., Any]) -> Callable[..., Any]:
            def step(*args: Any, **kwargs: Any) -> Any:
                never = hasattr(getattr(opt, "step", None), "_wrapped_by_lr_sched") and not getattr(opt, "_opt_called", False)
                report(window.on_scheduler(key, user_site(), never_stepped=never))
                return original(*args, **kwargs)
            return step

        self._patch(scheduler, "step", wrap_step)

    def _watch_scaler(self, scaler: Any) -> None:
        windows = self._windows
        report = self._report

        def wrap_unscale(original: Callable[..., Any]) -> Callable[..., Any]:
            def unscale_(optimizer: Any) -> Any:
                window = windows.get(id(optimizer))
                if window is not None:
                    window.on_unscale()
                return original(optimizer)
            return unscale_

        def wrap_step(original: Callable[..., Any]) -> Callable[..., Any]:
            def step(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
                window = windows.get(id(optimizer))
                updates = window.updates if window is not None else 0
                result = original(optimizer, *args, **kwargs)
                if window is not None and window.updates == updates:  # the scaler skipped the step
                    report(window.before_step(user_site()))
                    self._end_update(id(optimizer), skipped=True)
                return result
            return step

        self._patch(scaler, "unscale_", wrap_unscale)
        self._patch(scaler, "step", wrap_step)

    # -- events ------------------------------------------------------------------------------

    def _on_clip(self, site: Site, params: list[Any]) -> None:
        keys = frozenset(id(p) for p in params)
        enabled = self.scaler is not None and bool(getattr(self.scaler, "is_enabled", lambda: True)())
        for window in self._windows.values():
            clipped = keys & window.params
            if clipped:
                self._report(window.on_clip(site, clipped, scaled=self.scaler is not None, enabled=enabled))

    def _report(self, findings: Iterable[Finding]) -> None:
        __tracebackhide__ = True  # pytest: end the traceback at the user's call
        error = None
        for finding in findings:
            if self.on_violation == "raise" and not finding.warning_only:
                self.findings.append(finding)
                error = error or finding
            elif (finding.code, finding.site) not in self._warned:  # once per line: a long run stays small
                self._warned.add((finding.code, finding.site))
                self.findings.append(finding)
                warnings.warn_explicit(TrainingLoopWarning(finding), TrainingLoopWarning,
                                       finding.site.filename, finding.site.lineno)
        if error is not None:
            raise TrainingLoopError(error)


def watch(optimizer: Any, *, accumulation_steps: int, scheduler: Any = None, scaler: Any = None,
          on_violation: str = "raise") -> Watch:
    """Watch a training loop: ``with watch(optimizer, accumulation_steps=8, scheduler=s, scaler=sc): ...``.

    ``optimizer`` (and ``scheduler``) may be one object or a list. A violation raises
    ``TrainingLoopError`` (``on_violation="raise"``) or issues ``TrainingLoopWarning`` (``"warn"``);
    a scheduler step on an update the scaler skipped is always a warning. Both carry ``.code``
    (the static rule's GL code) and name the file and line of the offending call. A window that
    steps after fewer than N backward calls is reported (GL102) only when the next one does too,
    so a final partial window is never reported; with a loader shorter than N, call
    ``epoch_end()`` on the watch when the loader is exhausted.
    """
    return Watch(optimizer, accumulation_steps=accumulation_steps, scheduler=scheduler, scaler=scaler,
                 on_violation=on_violation)
