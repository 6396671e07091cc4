"""gradlint.testing.assert_accumulation_equivalent on real torch (CPU): correct updates pass with SGD and
AdamW; each classic accumulation bug fails with the explanation of its ratio pattern."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from gradlint.testing import assert_accumulation_equivalent, default_splits  # noqa: E402


def make_model(dropout: float = 0.0, dtype=torch.float32) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Dropout(dropout), nn.Linear(5, 2)).to(dtype)


def batch(size: int = 6, dtype=torch.float32) -> tuple:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(size, 3, generator=generator, dtype=dtype), torch.randn(size, 2, generator=generator, dtype=dtype)


def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def adamw(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-2)


def weighted(model, optimizer, micro_batches):
    """Correct: a sum-reduced loss divided by the window's total count."""
    optimizer.zero_grad()
    total = sum(targets.numel() for _, targets in micro_batches)
    for inputs, targets in micro_batches:
        (F.mse_loss(model(inputs), targets, reduction="sum") / total).backward()
    optimizer.step()


def no_division(model, optimizer, micro_batches):
    optimizer.zero_grad()
    for inputs, targets in micro_batches:
        F.mse_loss(model(inputs), targets).backward()
    optimizer.step()


def zeroed_inside(model, optimizer, micro_batches):
    for inputs, targets in micro_batches:
        optimizer.zero_grad()
        (F.mse_loss(model(inputs), targets) / len(micro_batches)).backward()
    optimizer.step()


def mean_of_means(model, optimizer, micro_batches):
    optimizer.zero_grad()
    for inputs, targets in micro_batches:
        (F.mse_loss(model(inputs), targets) / len(micro_batches)).backward()
    optimizer.step()


def step_per_micro_batch(model, optimizer, micro_batches):
    for inputs, targets in micro_batches:
        optimizer.zero_grad()
        F.mse_loss(model(inputs), targets).backward()
        optimizer.step()


def failure(update_fn, factory=sgd, **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        assert_accumulation_equivalent(update_fn, make_model(), factory, batch(), **kwargs)
    return str(info.value)


@pytest.mark.parametrize("factory", [sgd, adamw], ids=["SGD", "AdamW"])
def test_a_correctly_weighted_window_passes_and_leaves_the_model_alone(factory) -> None:
    model = make_model()
    before = [p.detach().clone() for p in model.parameters()]
    assert_accumulation_equivalent(weighted, model, factory, batch(), splits=[(4, 2), (3, 3), (1, 2, 3)])
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_float64_and_a_dict_batch() -> None:
    inputs, targets = batch(dtype=torch.float64)

    def update(model, optimizer, micro_batches):
        weighted(model, optimizer, [(mb["x"], mb["y"]) for mb in micro_batches])

    assert_accumulation_equivalent(update, make_model(dtype=torch.float64), sgd, {"x": inputs, "y": targets})


@pytest.mark.parametrize("factory", [sgd, adamw], ids=["SGD", "AdamW"])
def test_a_missing_division_is_n_times_too_large(factory) -> None:
    message = failure(no_division, factory, splits=[(3, 3)])
    assert message == ("the accumulated update differs from one update on the whole batch of 6:\n"
                       "  split (3, 3): the gradient is the sum of the micro-batch gradients (2 times too large): the "
                       "1/N is missing; divide each micro-batch loss by the number of micro-batches, or by the "
                       "window's valid count (GL201)")


def test_zeroing_inside_the_window_counts_only_the_last_micro_batch() -> None:
    message = failure(zeroed_inside, splits=[(2, 2, 2)])
    assert "split (2, 2, 2): only the last micro-batch counted (the gradient is 0.333 x that of the last" in message
    assert message.endswith("zero once per update, after the step (GL103)")


def test_a_mean_of_means_is_equal_on_even_splits_only() -> None:
    message = failure(mean_of_means)
    assert message.splitlines() == [
        "the accumulated update differs from one update on the whole batch of 6:",
        "  split (4, 2): the gradient is the mean of the micro-batch means: each micro-batch weighs the same although "
        "they hold different numbers of samples; reduce with sum and divide by the window's total count (GL203)",
        "  split (3, 3): equivalent",
        "equal on the even split (3, 3) but not on the uneven (4, 2): a mean of means; weight each micro-batch by its "
        "share of the window (divide by the window's valid count)",
    ]


def test_a_step_per_micro_batch_is_named() -> None:
    assert "split (4, 2): update_fn stepped the optimizer 2 times for one window of 2 micro-batches" in failure(
        step_per_micro_batch)


def test_eval_mode_puts_the_copies_in_eval() -> None:
    """BatchNorm in training mode normalises each micro-batch by its own statistics; in eval() it does not."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Dropout(0.5), nn.Linear(5, 2))
    with pytest.raises(AssertionError, match="split \\(4, 2\\): the gradients differ"):
        assert_accumulation_equivalent(weighted, model, sgd, batch())
    assert_accumulation_equivalent(weighted, model, sgd, batch(), eval_mode=True)
    assert model.training


@pytest.mark.parametrize(("size", "splits"), [(2, [(1, 1)]), (3, [(2, 1), (1, 1, 1)]), (6, [(4, 2), (3, 3)]),
                                              (7, [(5, 2), (1,) * 7])])
def test_default_splits(size: int, splits) -> None:
    assert default_splits(size) == splits


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"splits": [(4, 1)]}, "split (4, 1) does not divide a batch of 6 into positive sizes"),
    ({"splits": [(6, 0)]}, "split (6, 0) does not divide a batch of 6 into positive sizes"),
])
def test_bad_splits_are_one_line_errors(kwargs, message) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        assert_accumulation_equivalent(weighted, make_model(), sgd, batch(), **kwargs)


def test_a_batch_of_one_cannot_be_split() -> None:
    with pytest.raises(ValueError, match="^a batch of 1 cannot be split into micro-batches$"):
        assert_accumulation_equivalent(weighted, make_model(), sgd, batch(1))
