"""Fixes change only what their finding is about (issue 18, point 1): each case is a small
training loop, fixed with every fix (unsafe ones included) through the fixer, and the test
asserts the exact text that comes out, or that no fix is offered and nothing changes."""

from __future__ import annotations

import pytest

from gradlint import lint_source
from gradlint.fixer import fix_source
from gradlint.settings import default_settings


def _fixed(source: str) -> str:
    return fix_source(source, "t.py", default_settings(), unsafe=True).text


def _found(source: str) -> list[tuple[int, str, str | None]]:
    return [(d.line, d.code, d.fix.message if d.fix else None) for d in lint_source(source, "t.py")]


HEAD = "import torch\n\n\n"

CLIP_TWICE = HEAD + '''\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (step + 1) % accum_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
'''


def test_a_clip_the_boundary_already_makes_is_removed_not_doubled() -> None:
    assert _found(CLIP_TWICE) == [
        (8, "GL101", "Remove `torch.nn.utils.clip_grad_norm_()`: the update boundary already clips the gradients")]
    assert _fixed(CLIP_TWICE) == CLIP_TWICE.replace(
        "        loss.backward()\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
        "        loss.backward()\n", 1)


SCALER_TWICE = HEAD + '''\
def train(model, loader, optimizer, scaler, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if (step + 1) % accum_steps == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
'''


def test_a_scaler_step_and_update_the_boundary_already_makes_are_removed_not_doubled() -> None:
    found = _found(SCALER_TWICE)
    assert found[0] == (8, "GL102", "Remove `scaler.step()` and `scaler.update()`: the update boundary "
                        "already steps and updates the scaler")
    assert _fixed(SCALER_TWICE) == HEAD + '''\
def train(model, loader, optimizer, scaler, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        scaler.scale(loss).backward()
        if (step + 1) % accum_steps == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
'''


def test_a_scaler_update_the_boundary_already_makes_is_removed_not_doubled() -> None:
    source = SCALER_TWICE.replace("        scaler.step(optimizer)\n        scaler.update()\n        if",
                                  "        scaler.update()\n        if", 1)
    assert _found(source) == [(8, "GL307", "Remove scaler.update(): the update boundary already updates the scaler")]
    assert _fixed(source) == SCALER_TWICE.replace(
        "        scaler.step(optimizer)\n        scaler.update()\n        if", "        if", 1)


GUARDED_CLIP = HEAD + '''\
def train(model, loader, optimizer, accum_steps, max_norm):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        if max_norm is not None:
            params = [p for p in model.parameters() if p.grad is not None]
            torch.nn.utils.clip_grad_norm_(params, max_norm)
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
'''


def test_a_clip_moves_with_its_guard_and_the_statements_that_prepare_it() -> None:
    assert _fixed(GUARDED_CLIP) == HEAD + '''\
def train(model, loader, optimizer, accum_steps, max_norm):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        if (step + 1) % accum_steps == 0:
            if max_norm is not None:
                params = [p for p in model.parameters() if p.grad is not None]
                torch.nn.utils.clip_grad_norm_(params, max_norm)
            optimizer.step()
            optimizer.zero_grad()
'''


def test_a_guard_whose_prepared_names_are_read_later_does_not_move() -> None:
    source = GUARDED_CLIP.replace("        if (step + 1)", "        log(params)\n        if (step + 1)", 1)
    assert _found(source) == [(10, "GL101", None)]
    assert _fixed(source) == source


def test_a_guard_whose_test_the_loop_changes_before_the_boundary_does_not_move() -> None:
    source = GUARDED_CLIP.replace("        if (step + 1)", "        max_norm = schedule(step)\n        if (step + 1)", 1)
    assert _found(source) == [(10, "GL101", None)]
    assert _fixed(source) == source


BRANCH_CLIPS = HEAD + '''\
def train(model, loader, optimizer, accum_steps, fsdp):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        if fsdp:
            model.clip_grad_norm_(1.0)
        else:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
'''

BRANCH_STEPS = HEAD + '''\
def train(model, loader, optimizer, accum_steps, fsdp):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        if fsdp:
            optimizer.step()
        else:
            optimizer.step()
        if (step + 1) % accum_steps == 0:
            optimizer.zero_grad()
'''

OPTIMIZER_LOOPS = HEAD + '''\
def train(model, loader, optimizers, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        for opt in optimizers:
            opt.step()
        if (step + 1) % accum_steps == 0:
            for opt in optimizers:
                opt.step()
            for opt in optimizers:
                opt.zero_grad()
'''


@pytest.mark.parametrize(("source", "expected"), [
    (BRANCH_CLIPS, [(9, "GL101", None), (11, "GL101", None)]),
    (BRANCH_STEPS, [(9, "GL102", None), (11, "GL102", None)]),
    (OPTIMIZER_LOOPS, [(9, "GL102", None)]),
], ids=["clips-in-if-else", "steps-in-if-else", "inner-optimizer-loops"])
def test_calls_of_exclusive_branches_or_optimizer_loops_get_no_fix(source: str, expected: list) -> None:
    assert _found(source) == expected
    assert _fixed(source) == source


def test_a_step_in_its_own_optimizer_loop_moves_with_the_loop() -> None:
    source = OPTIMIZER_LOOPS.replace("            for opt in optimizers:\n                opt.step()\n", "", 1)
    assert _found(source) == [(9, "GL102", "Move `opt.step()` to the update boundary")]
    assert _fixed(source) == OPTIMIZER_LOOPS.replace(
        "        for opt in optimizers:\n            opt.step()\n        if", "        if", 1)


UNSCALE_IN_BRANCH = HEAD + '''\
def train(model, loader, optimizer, scaler, skip):
    for x, y in loader:
        scaler.scale(model(x, y)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if not skip:
            scaler.unscale_(optimizer)
            scaler.step(optimizer)
            scaler.update()
        optimizer.zero_grad()
'''


def test_unscale_is_never_moved_out_of_its_condition() -> None:
    assert _found(UNSCALE_IN_BRANCH) == [(7, "GL303", None)]
    assert _fixed(UNSCALE_IN_BRANCH) == UNSCALE_IN_BRANCH


def test_unscale_moves_before_the_clip_inside_the_update_gate() -> None:
    source = HEAD + '''\
def train(model, loader, optimizer, scaler, accum_steps):
    for step, (x, y) in enumerate(loader):
        scaler.scale(model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.unscale_(optimizer)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
'''
    assert _fixed(source) == source.replace(
        "            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n            scaler.unscale_(optimizer)\n",
        "            scaler.unscale_(optimizer)\n            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n")


OPTIONAL_SCALER = HEAD + '''\
def train(model, loader, optimizer, scaler, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        if scaler is not None:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        if (step + 1) % accum_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if scaler is not None:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            optimizer.zero_grad()
'''


def test_an_inserted_unscale_is_guarded_like_the_scalers_step() -> None:
    assert _found(OPTIONAL_SCALER) == [
        (12, "GL303", "Insert `scaler.unscale_(optimizer)` before `torch.nn.utils.clip_grad_norm_()`")]
    assert _fixed(OPTIONAL_SCALER) == OPTIONAL_SCALER.replace(
        "        if (step + 1) % accum_steps == 0:\n",
        "        if (step + 1) % accum_steps == 0:\n            if scaler is not None:\n"
        "                scaler.unscale_(optimizer)\n", 1)


def test_an_unscale_inserted_with_a_moved_clip_is_guarded_like_the_scalers_step() -> None:
    source = HEAD + '''\
def train(model, loader, optimizer, scaler, accum_steps, use_amp):
    for step, (x, y) in enumerate(loader):
        scaler.scale(model(x, y) / accum_steps).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (step + 1) % accum_steps == 0:
            if use_amp:
                scaler.step(optimizer)
                scaler.update()
            optimizer.zero_grad()
'''
    assert _fixed(source) == HEAD + '''\
def train(model, loader, optimizer, scaler, accum_steps, use_amp):
    for step, (x, y) in enumerate(loader):
        scaler.scale(model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            if use_amp:
                scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if use_amp:
                scaler.step(optimizer)
                scaler.update()
            optimizer.zero_grad()
'''


TD3 = HEAD + '''\
def train(actor, critic, replay, actor_optimizer, critic_optimizer, iterations, policy_delay):
    for it in range(iterations):
        state, action, reward = replay.sample()
        critic_loss = torch.nn.functional.mse_loss(critic(state, action), reward)
        critic_optimizer.zero_grad()
        critic_loss.backward()
        critic_optimizer.step()
        if it % policy_delay == 0:
            actor_loss = -critic.q1(state, actor(state)).mean()
            actor_optimizer.zero_grad()
            actor_loss.backward()
            actor_optimizer.step()
'''

GAN_LAZY_REGULARISATION = HEAD + '''\
def train(generator, discriminator, loader, d_optim, d_reg_every, r1):
    for idx, real_img in enumerate(loader):
        d_loss = discriminator(generator(torch.randn(4, 512))).mean() - discriminator(real_img).mean()
        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()
        if idx % d_reg_every == 0:
            real_img.requires_grad = True
            r1_loss = discriminator(real_img).sum()
            discriminator.zero_grad()
            (r1 / 2 * r1_loss * d_reg_every).backward()
            d_optim.step()
'''

PPO_MINIBATCHES = HEAD + '''\
def update(agent, optimizer, b_obs, update_epochs, minibatch_size, batch_size, max_grad_norm):
    for epoch in range(update_epochs):
        for start in range(0, batch_size, minibatch_size):
            loss = agent.loss(b_obs[start:start + minibatch_size])
            optimizer.zero_grad()
            loss.backward()
            if max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
            optimizer.step()
'''

PPO_ACCELERATE = HEAD + '''\
def update(agent, optimizer, batches, ppo_epochs, max_grad_norm, accelerator):
    for epoch in range(ppo_epochs):
        for mb in batches:
            with accelerator.accumulate(agent):
                accelerator.backward(agent.loss(mb))
                if max_grad_norm is not None:
                    if accelerator.sync_gradients:
                        accelerator.clip_grad_norm_(agent.parameters(), max_grad_norm)
                optimizer.step()
                optimizer.zero_grad()
'''


@pytest.mark.parametrize("source", [TD3, GAN_LAZY_REGULARISATION, PPO_MINIBATCHES, PPO_ACCELERATE],
                         ids=["td3-policy-delay", "gan-lazy-regularisation", "ppo-max-grad-norm",
                              "ppo-sync-gradients"])
def test_correct_code_that_is_not_accumulation_is_not_rewritten(source: str) -> None:
    assert _found(source) == []
    assert _fixed(source) == source


NON_FINITE = HEAD + '''\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        if not torch.isfinite(loss):
            optimizer.zero_grad()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
'''


def test_a_zero_grad_that_wipes_a_non_finite_window_is_never_removed() -> None:
    assert _found(NON_FINITE) == [(9, "GL103", None)]
    assert _fixed(NON_FINITE) == NON_FINITE


def test_an_unconditional_zero_grad_the_boundary_repeats_is_removed() -> None:
    source = NON_FINITE.replace("        if not torch.isfinite(loss):\n            optimizer.zero_grad()\n",
                                "        optimizer.zero_grad()\n", 1)
    assert _found(source) == [(8, "GL103", "Remove `optimizer.zero_grad()`: the update boundary already zeroes "
                               "the gradients")]
    assert _fixed(source) == NON_FINITE.replace(
        "        if not torch.isfinite(loss):\n            optimizer.zero_grad()\n", "", 1)


IN_PLACE_DIVISION = HEAD + '''\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.div_(accum_steps)
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
'''


def test_a_loss_divided_in_place_is_not_divided_again() -> None:
    assert _found(IN_PLACE_DIVISION) == []
    assert _fixed(IN_PLACE_DIVISION) == IN_PLACE_DIVISION
    undivided = IN_PLACE_DIVISION.replace("        loss.div_(accum_steps)\n", "", 1)
    assert _fixed(undivided) == undivided.replace("loss.backward()", "(loss / accum_steps).backward()")


DEEPSPEED_FACTOR = HEAD + '''\
def train(model, loader, optimizer, accelerator):
    if accelerator.state.deepspeed_plugin is not None:
        accum = accelerator.state.deepspeed_plugin.deepspeed_config["gradient_accumulation_steps"]
    else:
        accum = 1
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        loss = loss / accum
        accelerator.backward(loss)
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
'''


def test_a_loss_the_deepspeed_engine_divides_is_not_divided_again_after_the_fix() -> None:
    assert [(line, code) for line, code, _ in _found(DEEPSPEED_FACTOR)] == [(12, "GL204")]
    after = DEEPSPEED_FACTOR.replace("        loss = loss / accum\n", "", 1)
    assert _fixed(DEEPSPEED_FACTOR) == after
    assert [code for _, code, _ in _found(after)] == []  # GL201 does not put the division back


NESTED_GUARDED_CLIP = HEAD + '''\
def train(model, batches, optimizer, accum_steps, max_norm):
    for window in batches:
        for x, y in window:
            loss = model(x, y) / accum_steps
            loss.backward()
            if max_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        optimizer.zero_grad()
'''


def test_a_guarded_clip_leaves_the_micro_batch_loop_with_its_guard() -> None:
    assert _fixed(NESTED_GUARDED_CLIP) == NESTED_GUARDED_CLIP.replace(
        "            if max_norm:\n                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
        "        optimizer.step()\n",
        "        if max_norm:\n            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
        "        optimizer.step()\n", 1)


CLIP_IN_TRY = CLIP_TWICE.replace(
    "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        if",
    "        try:\n            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        except RuntimeError:\n"
    "            pass\n        if", 1).replace(
    "            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n            optimizer.step()",
    "            optimizer.step()", 1)
BOUNDARY_CLIP_GUARDED = CLIP_TWICE.replace(
    "            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n            optimizer.step()",
    "            if max_norm:\n                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    "            optimizer.step()", 1).replace("accum_steps):", "accum_steps, max_norm):", 1)


@pytest.mark.parametrize("source", [CLIP_IN_TRY, BOUNDARY_CLIP_GUARDED], ids=["clip-in-try", "boundary-clip-guarded"])
def test_a_clip_in_a_try_or_beside_a_guarded_boundary_clip_gets_no_fix(source: str) -> None:
    assert [(code, fix) for _, code, fix in _found(source)] == [("GL101", None)]
    assert _fixed(source) == source
