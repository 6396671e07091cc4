"""``assert_accumulation_equivalent``: one update from a window of micro-batches must equal one update on
the whole batch. Torch is imported when the helper runs, not when this module is imported."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

UpdateFn = Callable[[Any, Any, list[Any]], Any]
"""``update_fn(model, optimizer, micro_batches)``: zero, backward each micro-batch, step once."""


@dataclass
class _Run:
    """What one update did: the gradients each step was about to use, and the parameters after."""

    grads: list[list[Any]]
    params: dict[str, Any]


def assert_accumulation_equivalent(update_fn: UpdateFn, model: Any, optimizer_factory: Callable[[Any], Any], batch: Any,
                                   splits: Sequence[Sequence[int]] | None = None, *, eval_mode: bool = False,
                                   rtol: float | None = None, atol: float | None = None, seed: int = 0) -> None:
    """Assert that ``update_fn`` on each split of ``batch`` makes the update it makes on the whole batch.

    Every run starts from a copy of ``model`` (the model itself is not changed), a fresh
    ``optimizer_factory(model_copy)`` and the same random seed; ``eval_mode=True`` puts the copies in
    ``eval()`` (dropout off, BatchNorm on running statistics). ``batch`` is a tensor, or a tuple /
    list / dict of tensors split along their first dimension. ``splits`` are micro-batch sizes
    (default: an uneven split such as (2, 1) and an even one). The gradients the optimizer is about to
    use and the parameters after its step are compared, with a tolerance for the parameters' dtype
    (``rtol`` / ``atol`` override it). On a mismatch the ``AssertionError`` names the pattern: a
    missing 1/N, only the last micro-batch counted, or a mean of means on uneven splits.
    """
    import torch

    size = _batch_size(batch, torch)
    chosen = [tuple(sizes) for sizes in splits] if splits is not None else default_splits(size)
    for sizes in chosen:
        if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes) or sum(sizes) != size:
            raise ValueError(f"split {sizes} does not divide a batch of {size} into positive sizes")
    named = dict(model.named_parameters())
    default_rtol, default_atol = _tolerance([p.dtype for p in named.values()], torch)
    tol = (default_rtol if rtol is None else rtol, default_atol if atol is None else atol)

    def run(micro_batches: list[Any]) -> _Run:
        return _update(update_fn, model, optimizer_factory, micro_batches, eval_mode, seed, torch)

    whole = run([batch])
    if len(whole.grads) != 1:
        raise AssertionError(f"update_fn stepped the optimizer {len(whole.grads)} times for one batch: it must step once")
    outcomes = {}
    for sizes in chosen:
        micro = _split(batch, list(sizes), torch)
        outcomes[sizes] = _judge(run(micro), whole, micro, run, tol, torch)
    failed = {sizes: text for sizes, text in outcomes.items() if text}
    if failed:
        raise AssertionError(_report(size, outcomes, failed))


def default_splits(size: int) -> list[tuple[int, ...]]:
    """An uneven split (two thirds, one third) and an even one (by the smallest divisor) of ``size``."""
    if size < 2:
        raise ValueError(f"a batch of {size} cannot be split into micro-batches")
    divisor = next(d for d in range(2, size + 1) if size % d == 0)
    even = (size // divisor,) * divisor
    uneven = (size - size // 3, size // 3)
    return [uneven, even] if size >= 3 and uneven[0] != uneven[1] else [even]


# -- running ---------------------------------------------------------------------------------------


def _update(update_fn: UpdateFn, model: Any, optimizer_factory: Callable[[Any], Any], micro_batches: list[Any],
            eval_mode: bool, seed: int, torch: Any) -> _Run:
    replica = copy.deepcopy(model)
    if eval_mode:
        replica.eval()
    optimizer = optimizer_factory(replica)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    grads: list[list[Any]] = []

    def capture(opt: Any, args: Any, kwargs: Any) -> None:
        grads.append([torch.zeros_like(p) if p.grad is None else p.grad.detach().clone() for p in params])

    handle = optimizer.register_step_pre_hook(capture)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            update_fn(replica, optimizer, micro_batches)
    finally:
        handle.remove()
    return _Run(grads, {name: p.detach().clone() for name, p in replica.named_parameters()})


def _batch_size(batch: Any, torch: Any) -> int:
    sizes = {leaf.shape[0] for leaf in _leaves(batch, torch)}
    if len(sizes) != 1:
        raise ValueError("batch must hold tensors that share their first dimension" if sizes else
                         "batch holds no tensor to split")
    return sizes.pop()


def _leaves(batch: Any, torch: Any) -> list[Any]:
    if isinstance(batch, torch.Tensor):
        return [batch] if batch.dim() > 0 else []
    if isinstance(batch, Mapping):
        return [leaf for value in batch.values() for leaf in _leaves(value, torch)]
    if isinstance(batch, (tuple, list)):
        return [leaf for value in batch for leaf in _leaves(value, torch)]
    return []


def _split(batch: Any, sizes: list[int], torch: Any) -> list[Any]:
    """``batch`` cut into micro-batches of ``sizes`` (non-tensor leaves are repeated)."""
    if isinstance(batch, torch.Tensor) and batch.dim() > 0:
        return list(torch.split(batch, sizes))
    if isinstance(batch, Mapping):
        columns = {key: _split(value, sizes, torch) for key, value in batch.items()}
        mapping: Any = type(batch)
        return [mapping({key: parts[i] for key, parts in columns.items()}) for i in range(len(sizes))]
    if isinstance(batch, (tuple, list)):
        columns_ = [_split(value, sizes, torch) for value in batch]
        rows = [[parts[i] for parts in columns_] for i in range(len(sizes))]
        kind: Any = type(batch)
        return [kind(*row) if hasattr(batch, "_fields") else kind(row) for row in rows]  # a namedtuple, or not
    return [batch] * len(sizes)


def _tolerance(dtypes: list[Any], torch: Any) -> tuple[float, float]:
    """(rtol, atol) for the least precise floating dtype among the parameters."""
    table = {torch.float64: (1e-7, 1e-10), torch.float32: (1e-4, 1e-6), torch.float16: (1e-2, 1e-3),
             torch.bfloat16: (2e-2, 1e-2)}
    return max((table.get(dtype, table[torch.float32]) for dtype in dtypes), default=table[torch.float32])


# -- judging ---------------------------------------------------------------------------------------


def _flat(tensors: list[Any], torch: Any) -> Any:
    return torch.cat([t.reshape(-1).double() for t in tensors]) if tensors else torch.zeros(0, dtype=torch.float64)


def _close(value: Any, target: Any, tol: tuple[float, float]) -> bool:
    rtol, atol = tol
    scale = float(target.abs().max()) if target.numel() else 0.0
    return float((value - target).abs().max()) <= atol + rtol * scale if target.numel() else True


def _judge(split: _Run, whole: _Run, micro: list[Any], run: Callable[[list[Any]], _Run], tol: tuple[float, float],
           torch: Any) -> str:
    """"" when the split's update equals the whole batch's, else what the difference means."""
    count = len(micro)
    if len(split.grads) != 1:
        return (f"update_fn stepped the optimizer {len(split.grads)} times for one window of {count} micro-batches: "
                "it must step once, after the last backward (GL102)")
    got, want = _flat(split.grads[0], torch), _flat(whole.grads[0], torch)
    if not _close(got, want, tol):
        return _explain(got, want, micro, run, tol, torch)
    for name, after in split.params.items():
        if not _close(after.double(), whole.params[name].double(), tol):
            return (f"the gradients match but the parameters after the step differ ({name}): the update changes them "
                    "other than by one optimizer step")
    return ""


def _fit(value: Any, basis: Any) -> float:
    """The factor that best scales ``basis`` onto ``value`` (least squares)."""
    norm = float(basis.dot(basis))
    return float(value.dot(basis)) / norm if norm else 0.0


def _explain(got: Any, want: Any, micro: list[Any], run: Callable[[list[Any]], _Run], tol: tuple[float, float],
             torch: Any) -> str:
    loose = (tol[0] * 10, tol[1] * 10)
    count = len(micro)
    singles = [run([mb]).grads for mb in micro]  # each micro-batch as a whole batch
    if any(len(grads) != 1 for grads in singles):
        return f"the gradients differ: largest difference {float((got - want).abs().max()):.3g}"
    alone = [_flat(grads[0], torch) for grads in singles]
    even = len({_batch_size(mb, torch) for mb in micro}) == 1
    ratio = _fit(got, want)
    if _close(got, sum(alone), loose):
        times = f"{count} times too large" if even else f"{ratio:.3g} times the full batch's"
        return (f"the gradient is the sum of the micro-batch gradients ({times}): the 1/N is missing; divide each "
                "micro-batch loss by the number of micro-batches, or by the window's valid count (GL201)")
    last = alone[-1]
    share = _fit(got, last)
    if count > 1 and not _close(last, _fit(last, want) * want, loose) and _close(got, share * last, loose):
        return (f"only the last micro-batch counted (the gradient is {share:.3g} x that of the last micro-batch "
                "alone): the gradients are zeroed inside the window; zero once per update, after the step (GL103)")
    if not even and _close(got, sum(alone) / count, loose):
        return ("the gradient is the mean of the micro-batch means: each micro-batch weighs the same although they "
                "hold different numbers of samples; reduce with sum and divide by the window's total count (GL203)")
    if _close(got, ratio * want, loose):
        return f"the gradient is {ratio:.3g} times the full batch's"
    return (f"the gradients differ: largest difference {float((got - want).abs().max()):.3g} "
            f"(largest full-batch gradient {float(want.abs().max()):.3g})")


def _report(size: int, outcomes: dict[tuple[int, ...], str], failed: dict[tuple[int, ...], str]) -> str:
    lines = [f"the accumulated update differs from one update on the whole batch of {size}:"]
    lines += [f"  split {sizes}: {failed.get(sizes) or 'equivalent'}" for sizes in outcomes]
    passed_even = [sizes for sizes in outcomes if sizes not in failed and len(set(sizes)) == 1]
    failed_uneven = [sizes for sizes in failed if len(set(sizes)) > 1]
    if passed_even and failed_uneven:
        lines.append(f"equal on the even split {passed_even[0]} but not on the uneven {failed_uneven[0]}: a mean of "
                     "means; weight each micro-batch by its share of the window (divide by the window's valid count)")
    return "\n".join(lines)
