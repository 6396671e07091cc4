"""A per-batch function, called once per micro-batch, that steps several optimizers."""

import torch


def train_step(model, optimizers, batch, index, accum_steps):
    loss = torch.nn.functional.mse_loss(model(batch[0]), batch[1]) / accum_steps
    loss.backward()
    if (index + 1) % accum_steps == 0:
        for optimizer in optimizers:
            optimizer.step()
            if optimizer.defaults.get("foreach"):
                optimizer.zero_grad(set_to_none=True)
                continue
            optimizer.zero_grad(set_to_none=False)
