"""gradlint.runtime.watch on real torch (CPU): each check raises with its code on a buggy loop, naming the
offending line of this file; correct loops (plain, nested, counted gate with a final partial window, AMP
with a disabled scaler and a skipped step, two optimizers) run silently and bit for bit as without it."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from gradlint.runtime import TrainingLoopError, TrainingLoopWarning, watch  # noqa: E402

N = 4
SOURCE = Path(__file__).read_text(encoding="utf-8").splitlines()


def line_of(marker: str) -> int:
    """The line of this file that ends with the comment ``# <marker>``."""
    (line,) = [number for number, text in enumerate(SOURCE, start=1) if text.rstrip().endswith(f"# {marker}")]
    return line


def setup(seed: int = 0, batches: int = 10) -> tuple[nn.Module, torch.optim.Optimizer, list]:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = [(torch.randn(2, 3), torch.randn(2, 2)) for _ in range(batches)]
    return model, optimizer, data


def loss_of(model: nn.Module, batch: tuple) -> torch.Tensor:
    inputs, targets = batch
    return F.mse_loss(model(inputs), targets)


def raised(loop: Callable[..., None], **options) -> TrainingLoopError:
    model, optimizer, data = setup()
    with pytest.raises(TrainingLoopError) as info:
        with watch(optimizer, accumulation_steps=options.pop("n", N), **options):
            loop(model, optimizer, data)
    return info.value


def assert_names(error: TrainingLoopError | TrainingLoopWarning, code: str, marker: str) -> None:
    assert (error.code, error.filename, error.lineno) == (code, __file__, line_of(marker))
    assert str(error).startswith(f"{__file__}:{line_of(marker)}: {code} ")


# -- correct loops ---------------------------------------------------------------------------------


def gated(model, optimizer, data, scheduler=None, epochs=1, on_epoch_end=None):
    for _ in range(epochs):
        for step, batch in enumerate(data):
            window_start = step - step % N
            window = min(N, len(data) - window_start)
            (loss_of(model, batch) / window).backward()
            if (step + 1) % N == 0 or step + 1 == len(data):
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
                if scheduler is not None:
                    scheduler.step()
        if on_epoch_end is not None:
            on_epoch_end()


def nested(model, optimizer, data, scheduler=None):
    for start in range(0, len(data) - N + 1, N):
        optimizer.zero_grad()
        for batch in data[start:start + N]:
            (loss_of(model, batch) / N).backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
        optimizer.step()
        scheduler.step()


def plain(model, optimizer, data, scheduler=None):
    for batch in data:
        optimizer.zero_grad(set_to_none=False)
        loss_of(model, batch).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()


def model_zeroed(model, optimizer, data, scheduler=None):
    for step, batch in enumerate(data[:8]):
        (loss_of(model, batch) / N).backward()
        if (step + 1) % N == 0:
            optimizer.step()
            model.zero_grad()


def final_parameters(loop, watched: bool, n: int = N, **kwargs) -> list[torch.Tensor]:
    model, optimizer, data = setup()
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    if watched:
        with watch(optimizer, accumulation_steps=n, scheduler=scheduler):
            loop(model, optimizer, data, scheduler, **kwargs)
    else:
        loop(model, optimizer, data, scheduler, **kwargs)
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize(("loop", "n"), [(gated, N), (nested, N), (plain, 1), (model_zeroed, N)],
                         ids=["gated", "nested", "plain", "model-zero-grad"])
def test_correct_loops_are_silent_and_unchanged_bit_for_bit(loop, n) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrainingLoopWarning)
        watched = final_parameters(loop, True, n)
    bare = final_parameters(loop, False, n)
    assert all(torch.equal(a, b) for a, b in zip(watched, bare, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(watched, [p.detach() for p in setup()[0].parameters()], strict=True))


def test_several_epochs_each_with_a_final_partial_window_are_silent() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrainingLoopWarning)
        assert final_parameters(gated, True, epochs=3)  # 10 micro-batches: windows of 4, 4, 2 per epoch


def test_a_loader_shorter_than_the_window_needs_epoch_end() -> None:
    model, optimizer, data = setup(batches=3)
    with watch(optimizer, accumulation_steps=N) as watcher:
        gated(model, optimizer, data, epochs=3, on_epoch_end=watcher.epoch_end)
    assert watcher.findings == []
    model, optimizer, data = setup(batches=3)
    with pytest.raises(TrainingLoopError) as info, watch(optimizer, accumulation_steps=N):
        gated(model, optimizer, data, epochs=2)
    assert info.value.code == "GL102"


def test_two_optimizers_alternating_are_silent() -> None:
    torch.manual_seed(0)
    generator, critic = nn.Linear(2, 3), nn.Linear(3, 1)
    opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3)
    with watch([opt_g, opt_c], accumulation_steps=1) as watcher:
        for _ in range(5):
            opt_c.zero_grad()
            fake = generator(torch.randn(4, 2))
            critic_loss = critic(fake).mean() - critic(torch.randn(4, 3)).mean()  # reaches the generator too
            critic_loss.backward()
            opt_c.step()
            opt_g.zero_grad()
            (-critic(generator(torch.randn(4, 2))).mean()).backward()
            torch.nn.utils.clip_grad_norm_(generator.parameters(), 1.0)
            opt_g.step()
    assert watcher.findings == []


def test_two_optimizers_accumulating_over_two_micro_batches_are_silent() -> None:
    torch.manual_seed(0)
    encoder, head = nn.Linear(3, 4), nn.Linear(4, 2)
    opt_e = torch.optim.SGD(encoder.parameters(), lr=0.1)
    opt_h = torch.optim.AdamW(head.parameters(), lr=1e-3)
    with watch([opt_e, opt_h], accumulation_steps=2) as watcher:
        for step in range(7):  # windows of 2, 2, 2 and a final one of 1
            (F.mse_loss(head(encoder(torch.randn(2, 3))), torch.randn(2, 2)) / 2).backward()
            if step % 2 == 1 or step == 6:
                torch.nn.utils.clip_grad_norm_([*encoder.parameters(), *head.parameters()], 1.0)
                opt_e.step()
                opt_h.step()
                opt_e.zero_grad()
                opt_h.zero_grad()
    assert watcher.findings == []


def test_a_closure_optimizer_is_silent() -> None:
    model, _, data = setup()
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=3)
    with watch(optimizer, accumulation_steps=1) as watcher:
        for batch in data:
            def closure(batch=batch):
                optimizer.zero_grad()
                loss = loss_of(model, batch)
                loss.backward()
                return loss
            optimizer.step(closure)
    assert watcher.findings == []


class FlakyScaler:
    """``scaler.step`` of a disabled GradScaler that skips the steps listed, as an overflow would."""

    def __init__(self, scaler, skip: set[int]) -> None:
        self.real, self.skip, self.calls = scaler.step, skip, 0

    def __call__(self, optimizer, *args, **kwargs):
        self.calls += 1
        if self.calls in self.skip:
            return None
        return self.real(optimizer, *args, **kwargs)


def amp_loop(model, optimizer, data, scaler, scheduler):
    for step, batch in enumerate(data[:8]):
        scaler.scale(loss_of(model, batch) / N).backward()
        if (step + 1) % N == 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            scheduler.step()  # skipped-step scheduler


def test_amp_with_a_disabled_scaler_and_a_skipped_step_warns_only_about_the_scheduler() -> None:
    model, optimizer, data = setup()
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    scaler.step = FlakyScaler(scaler, skip={1})
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.warns(TrainingLoopWarning) as record, watch(optimizer, accumulation_steps=N, scheduler=scheduler,
                                                            scaler=scaler) as watcher:
        amp_loop(model, optimizer, data, scaler, scheduler)
    (warning,) = [w.message for w in record if isinstance(w.message, TrainingLoopWarning)]
    assert_names(warning, "GL302", "skipped-step scheduler")
    assert warning.check == "scheduler-on-skipped-step" and "GradScaler skipped" in str(warning)
    assert [f.code for f in watcher.findings] == ["GL302"]
    assert scaler.step.calls == 2 and not all(
        torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_amp_without_a_skipped_step_is_silent() -> None:
    model, optimizer, data = setup()
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrainingLoopWarning)
        with watch(optimizer, accumulation_steps=N, scheduler=scheduler, scaler=scaler) as watcher:
            amp_loop(model, optimizer, data, scaler, scheduler)
    assert watcher.findings == []


def test_an_amp_loop_with_an_enabled_scaler_is_unchanged_bit_for_bit() -> None:
    def amp(watched: bool) -> list[torch.Tensor]:
        model, optimizer, data = setup()
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        scaler = torch.amp.GradScaler("cpu")
        with watch(optimizer, accumulation_steps=N, scheduler=scheduler, scaler=scaler) if watched else nullcontext():
            amp_loop(model, optimizer, data, scaler, scheduler)
        return [p.detach().clone() for p in model.parameters()]

    assert all(torch.equal(a, b) for a, b in zip(amp(True), amp(False), strict=True))


def test_a_real_overflow_on_an_enabled_cpu_scaler_is_the_same_warning() -> None:
    model, optimizer, data = setup()
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    scaler = torch.amp.GradScaler("cpu")
    data[0] = (torch.full((2, 3), float("inf")), data[0][1])  # the first window's gradients are not finite
    with pytest.warns(TrainingLoopWarning, match="GL302 the scheduler advanced on an update"), \
            watch(optimizer, accumulation_steps=N, scheduler=scheduler, scaler=scaler):
        amp_loop(model, optimizer, data, scaler, scheduler)


# -- buggy loops -----------------------------------------------------------------------------------


def step_per_micro_batch(model, optimizer, data):
    for step, batch in enumerate(data):
        (loss_of(model, batch) / N).backward()
        optimizer.step()  # GL102 step
        if (step + 1) % N == 0:
            optimizer.zero_grad()


def zero_per_micro_batch(model, optimizer, data):
    for step, batch in enumerate(data):
        optimizer.zero_grad()  # GL103 zero
        (loss_of(model, batch) / N).backward()
        if (step + 1) % N == 0:
            optimizer.step()


def zero_before_step(model, optimizer, data):
    for step, batch in enumerate(data):
        (loss_of(model, batch) / N).backward()
        if (step + 1) % N == 0:
            optimizer.zero_grad()  # GL305 zero
            optimizer.step()


def never_zeroed(model, optimizer, data):
    for batch in data:
        loss_of(model, batch).backward()
        optimizer.step()  # GL304 step


def never_zeroed_window(model, optimizer, data):
    for step, batch in enumerate(data):
        (loss_of(model, batch) / N).backward()
        if (step + 1) % N == 0:
            optimizer.step()  # GL304 window step


def clip_per_micro_batch(model, optimizer, data):
    for step, batch in enumerate(data):
        (loss_of(model, batch) / N).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # GL101 clip
        if (step + 1) % N == 0:
            optimizer.step()
            optimizer.zero_grad()


def clip_at_window_start(model, optimizer, data):
    from torch.nn.utils import clip_grad_norm_

    for step, batch in enumerate(data):
        (loss_of(model, batch) / N).backward()
        if step % N == 0:
            clip_grad_norm_(model.parameters(), 1.0)  # GL101 early clip
        if (step + 1) % N == 0:
            optimizer.step()
            optimizer.zero_grad()


def clip_after_step(model, optimizer, data):
    for step, batch in enumerate(data):
        (loss_of(model, batch) / N).backward()
        if (step + 1) % N == 0:
            optimizer.step()
            torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)  # GL301 clip
            optimizer.zero_grad()


def test_step_per_micro_batch_is_gl102() -> None:
    error = raised(step_per_micro_batch)
    assert_names(error, "GL102", "GL102 step")
    assert error.check == "step-inside-window"
    assert "stepped after 1 of 4 backward calls, and the next update after 1" in str(error)


def test_zero_grad_per_micro_batch_is_gl103() -> None:
    assert_names(raised(zero_per_micro_batch), "GL103", "GL103 zero")


def test_zero_grad_before_step_is_gl305() -> None:
    assert_names(raised(zero_before_step), "GL305", "GL305 zero")


@pytest.mark.parametrize(("loop", "n", "marker"), [(never_zeroed, 1, "GL304 step"),
                                                    (never_zeroed_window, N, "GL304 window step")])
def test_never_zeroed_is_gl304(loop, n, marker) -> None:
    assert_names(raised(loop, n=n), "GL304", marker)


def test_clip_per_micro_batch_is_gl101() -> None:
    error = raised(clip_per_micro_batch)
    assert_names(error, "GL101", "GL101 clip")
    assert error.check == "clip-twice"


def test_one_clip_before_the_window_is_complete_is_gl101_even_when_imported_early() -> None:
    error = raised(clip_at_window_start)
    assert_names(error, "GL101", "GL101 early clip")
    assert "clipped after 1 of the window's 4 backward calls" in str(error)


def test_a_clip_at_infinity_that_only_measures_the_norm_is_not_a_clip() -> None:
    model, optimizer, data = setup()
    with watch(optimizer, accumulation_steps=N) as watcher:
        for step, batch in enumerate(data[:8]):
            (loss_of(model, batch) / N).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))  # logged every micro-batch
            if (step + 1) % N == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
                optimizer.step()
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=torch.tensor(float("inf")))
                optimizer.zero_grad()
    assert watcher.findings == []


def test_clip_after_step_is_gl301() -> None:
    assert_names(raised(clip_after_step), "GL301", "GL301 clip")


@pytest.mark.parametrize(("enabled", "text"), [
    (True, "they are still multiplied by the loss scale; call scaler.unscale_(optimizer) before the clip"),
    (False, "the scaler is disabled in this run, but once enabled they are still multiplied by the loss scale"),
])
def test_clip_before_unscale_is_gl303(enabled: bool, text: str) -> None:
    model, optimizer, data = setup()
    scaler = torch.amp.GradScaler("cpu", enabled=enabled)
    with pytest.raises(TrainingLoopError) as info, watch(optimizer, accumulation_steps=N, scaler=scaler):
        for step, batch in enumerate(data):
            scaler.scale(loss_of(model, batch) / N).backward()
            if (step + 1) % N == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # GL303 clip
                scaler.unscale_(optimizer)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
    assert_names(info.value, "GL303", "GL303 clip")
    assert text in str(info.value)


def scheduled(position: str):
    def loop(model, optimizer, data, scheduler):
        for step, batch in enumerate(data):
            if position == "top" and step % N == 0:
                scheduler.step()  # GL302 first
            (loss_of(model, batch) / N).backward()
            if position == "micro":
                scheduler.step()  # GL104 scheduler
            if (step + 1) % N == 0:
                if position == "before":
                    scheduler.step()  # GL302 scheduler
                optimizer.step()
                optimizer.zero_grad()
    return loop


@pytest.mark.parametrize(("position", "code", "marker", "check"), [
    ("micro", "GL104", "GL104 scheduler", "scheduler-twice"),
    ("before", "GL302", "GL302 scheduler", "scheduler-before-step"),
    ("top", "GL302", "GL302 first", "scheduler-before-first-step"),
])
def test_misplaced_scheduler_steps(position: str, code: str, marker: str, check: str) -> None:
    model, optimizer, data = setup()
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    with pytest.raises(TrainingLoopError) as info, watch(optimizer, accumulation_steps=N, scheduler=scheduler):
        scheduled(position)(model, optimizer, data, scheduler)
    assert_names(info.value, code, marker)
    assert info.value.check == check


def test_warn_mode_warns_once_per_line_and_keeps_training() -> None:
    model, optimizer, data = setup()
    with pytest.warns(TrainingLoopWarning) as record, \
            watch(optimizer, accumulation_steps=N, on_violation="warn") as watcher:
        clip_per_micro_batch(model, optimizer, data)
    messages = [w.message for w in record if isinstance(w.message, TrainingLoopWarning)]
    assert [(m.code, m.check) for m in messages] == [("GL101", "clip-twice")]
    assert (record[0].filename, record[0].lineno) == (__file__, line_of("GL101 clip"))
    assert watcher.findings == [messages[0].finding]  # recorded once per line, like the warning


# -- hooks and arguments ---------------------------------------------------------------------------


def hook_state(model, optimizer, scheduler) -> tuple:
    params = list(model.parameters())
    return (len(optimizer._optimizer_step_pre_hooks), len(optimizer._optimizer_step_post_hooks),
            [len(p._post_accumulate_grad_hooks or {}) for p in params], [len(p._backward_hooks or {}) for p in params],
            "zero_grad" in vars(optimizer), "step" in vars(scheduler), torch.nn.utils.clip_grad_norm_,
            torch.nn.utils.clip_grad._clip_grads_with_norm_)


def test_every_hook_is_removed_on_exit_and_on_an_exception() -> None:
    model, optimizer, data = setup()
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
    before = hook_state(model, optimizer, scheduler)
    with watch(optimizer, accumulation_steps=N, scheduler=scheduler):
        assert hook_state(model, optimizer, scheduler) != before
    assert hook_state(model, optimizer, scheduler) == before
    with pytest.raises(KeyError), watch(optimizer, accumulation_steps=N, scheduler=scheduler):
        raise KeyError("boom")
    with pytest.raises(TrainingLoopError), watch(optimizer, accumulation_steps=N, scheduler=scheduler):
        step_per_micro_batch(model, optimizer, data)
    assert hook_state(model, optimizer, scheduler) == before


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"accumulation_steps": 0}, ValueError, "accumulation_steps must be a positive int, not 0"),
    ({"accumulation_steps": True}, ValueError, "accumulation_steps must be a positive int, not True"),
    ({"accumulation_steps": 2, "on_violation": "log"}, ValueError, "on_violation must be 'raise' or 'warn', not 'log'"),
])
def test_bad_arguments_are_one_line_errors(kwargs, error, message) -> None:
    optimizer = setup()[1]
    with pytest.raises(error, match=f"^{message}$"):
        watch(optimizer, **kwargs)


def test_a_non_optimizer_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="^watch\\(\\) needs torch.optim.Optimizer objects, not Linear$"):
        watch(nn.Linear(1, 1), accumulation_steps=2)
