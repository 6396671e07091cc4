"""A correct accumulating loop: DDP with no_sync, AMP, a counted gate with a last-batch branch."""

import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel


def train(model, loader, accum_steps, local_rank):
    model = DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    scaler = torch.amp.GradScaler("cuda")
    updates = 0
    for step, (inputs, targets) in enumerate(loader):
        window_start = step - step % accum_steps
        window_size = min(accum_steps, len(loader) - window_start)
        last = step + 1 == len(loader)
        boundary = (step + 1) % accum_steps == 0 or last
        sync_context = contextlib.nullcontext() if boundary else model.no_sync()
        with sync_context:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.cross_entropy(model(inputs), targets)
            loss = loss / window_size
            scaler.scale(loss).backward()
        if (step + 1) % accum_steps == 0 or last:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            optimizer.zero_grad()
            updates += 1
            if updates % 100 == 0:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(),
                            "updates": updates}, "ckpt.pt")
