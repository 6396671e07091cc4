"""Every message that names another event pairs it by receiver: a zero_grad goes with the step
of the optimizer it zeroes, a scheduler with the step of the optimizer its constructor was
given (else with none, when several optimizers step), a clip with the loop's only optimizer
(else none), an unscale with the scaler step that follows. Two-optimizer (GAN) loops."""

from __future__ import annotations

from pathlib import Path

from gradlint.engine import lint_source
from gradlint.settings import default_settings

GAN = """\
import torch


def zero_wrong(G, D, loader, opt_g, opt_d, n):
    for i, x in enumerate(loader):
        (D(x) / n).backward()
        opt_d.zero_grad()
        (G(x) / n).backward()
        if (i + 1) % n == 0:
            opt_g.step()
            opt_d.step()
            opt_g.zero_grad()


def sched_micro(G, D, loader, n):
    opt_g = torch.optim.Adam(G.parameters())
    opt_d = torch.optim.Adam(D.parameters())
    sched_d = torch.optim.lr_scheduler.StepLR(opt_d, 10)
    for i, x in enumerate(loader):
        ((D(x) + G(x)) / n).backward()
        sched_d.step()
        if (i + 1) % n == 0:
            opt_g.step()
            opt_d.step()
            opt_g.zero_grad()
            opt_d.zero_grad()


def sched_unknown(G, D, loader, opt_g, opt_d, sched, n):
    for i, x in enumerate(loader):
        ((D(x) + G(x)) / n).backward()
        sched.step()
        if (i + 1) % n == 0:
            opt_g.step()
            opt_d.step()
            opt_g.zero_grad()
            opt_d.zero_grad()


def sched_order(G, D, loader):
    opt_g = torch.optim.Adam(G.parameters())
    opt_d = torch.optim.Adam(D.parameters())
    sched_d = torch.optim.lr_scheduler.StepLR(opt_d, 10)
    for x in loader:
        (D(x) + G(x)).backward()
        opt_g.step()
        sched_d.step()
        opt_d.step()
        opt_g.zero_grad()
        opt_d.zero_grad()


def sched_order_unknown(G, D, loader, opt_g, opt_d, sched):
    for x in loader:
        (D(x) + G(x)).backward()
        sched.step()
        opt_g.step()
        opt_d.step()
        opt_g.zero_grad()
        opt_d.zero_grad()


def clip_micro(G, D, loader, opt_g, opt_d, n):
    for i, x in enumerate(loader):
        ((D(x) + G(x)) / n).backward()
        torch.nn.utils.clip_grad_norm_(D.parameters(), 1.0)
        if (i + 1) % n == 0:
            opt_g.step()
            opt_d.step()
            opt_g.zero_grad()
            opt_d.zero_grad()


def clip_unscaled(G, D, loader, opt_g, opt_d, scaler):
    for x in loader:
        scaler.scale(D(x) + G(x)).backward()
        torch.nn.utils.clip_grad_norm_(D.parameters(), 1.0)
        scaler.step(opt_d)
        scaler.step(opt_g)
        scaler.update()
        opt_g.zero_grad()
        opt_d.zero_grad()


class Gan:
    def __init__(self, G, D):
        self.opt_g = torch.optim.Adam(G.parameters())
        self.opt_d = torch.optim.Adam(D.parameters())
        self.sched_d = torch.optim.lr_scheduler.StepLR(self.opt_d, 10)

    def train(self, G, D, loader, n):
        for i, x in enumerate(loader):
            ((D(x) + G(x)) / n).backward()
            self.sched_d.step()
            if (i + 1) % n == 0:
                self.opt_g.step()
                self.opt_d.step()
                self.opt_g.zero_grad()
                self.opt_d.zero_grad()
"""

MICRO = "runs on every micro-batch; step it once per update, "

EXPECTED = {
    7: ("GL103", "opt_d.zero_grad() zeroes inside the accumulation window; zero right after opt_d.step()"),
    21: ("GL104", f"sched_d.step() {MICRO}right after opt_d.step()"),
    32: ("GL104", f"sched.step() {MICRO}right after its optimizer's step"),
    47: ("GL302", "sched_d.step() runs before opt_d.step(); call it after opt_d.step()"),
    56: ("GL302", "sched.step() runs before opt_g.step() and opt_d.step(); call it after its optimizer's step"),
    66: ("GL101", "torch.nn.utils.clip_grad_norm_() runs on every micro-batch; clip once, just before the optimizer step"),
    77: ("GL303", "torch.nn.utils.clip_grad_norm_() clips scaled gradients; call scaler.unscale_(opt_d) first"),
    94: ("GL104", f"self.sched_d.step() {MICRO}right after self.opt_d.step()"),
}


def test_two_optimizer_messages_pair_events_by_receiver(tmp_path: Path) -> None:
    path = tmp_path / "gan.py"
    path.write_text(GAN, encoding="utf-8")
    found = {d.line: (d.code, d.message) for d in lint_source(GAN, str(path), default_settings())}
    assert found == EXPECTED


def test_a_scheduler_built_on_one_optimizer_is_not_excused_by_another_optimizer_s_step(tmp_path: Path) -> None:
    """``opt_g.step(); sched_d.step(); opt_d.step()``: sched_d's own optimizer steps after it.
    With the pairing unknown (``sched`` a parameter) a step before it is enough to stay silent."""
    text = GAN.replace("        sched.step()\n        opt_g.step()\n", "        opt_g.step()\n        sched.step()\n")
    path = tmp_path / "gan.py"
    path.write_text(text, encoding="utf-8")
    found = {(d.line, d.code) for d in lint_source(text, str(path), default_settings())}
    assert (47, "GL302") in found
    assert not any(code == "GL302" and line in (56, 57) for line, code in found)
