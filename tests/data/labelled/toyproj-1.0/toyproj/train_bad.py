"""Defective accumulating loops."""

import torch


def train(model, loader, accum_steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (inputs, targets) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(inputs), targets) / accum_steps
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()


def finetune(model, loader, accum_steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (inputs, targets) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()


def probe(model, batches, accum_steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (inputs, targets) in enumerate(batches):
        loss = torch.nn.functional.mse_loss(model(inputs), targets) / accum_steps
        loss.backward()
        optimizer.step()
        if (i + 1) % accum_steps == 0 or i + 1 == len(batches):
            optimizer.zero_grad()


def warmup(model, batches, accum_steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for update in range(len(batches) // accum_steps):
        for micro_step in range(accum_steps):
            inputs, targets = batches[update * accum_steps + micro_step]
            loss = torch.nn.functional.mse_loss(model(inputs), targets) / accum_steps
            loss.backward()
            optimizer.zero_grad()
        optimizer.step()
