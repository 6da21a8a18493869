"""The seed article's training loop ("From Install to Your First Model"),
verbatim but for the import. It draws fresh random data every step, so its loss
hovers near ln 10: what is asserted is that it runs and every loss is finite."""

import math


def test_seed_training_loop_runs_with_kiln_as_torch():
    losses = []
    # --- the seed's loop, with `import torch` swapped for `import kiln as torch` ---
    import kiln as torch
    import kiln.nn as nn

    model = nn.Sequential(
        nn.Linear(784, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    for step in range(10):
        x = torch.randn(64, 784)
        y = torch.randint(0, 10, (64,))
        pred = model(x)          # __call__ -> hooks -> forward -> aten ops
        loss = loss_fn(pred, y)  # dispatcher records an autograd graph
        opt.zero_grad()
        loss.backward()          # Engine::execute walks the recorded graph
        opt.step()               # Adam.step updates every Parameter
        # --- end of the seed's loop ---
        losses.append(loss.item())
    assert len(losses) == 10
    assert all(math.isfinite(v) for v in losses), losses
    assert all(1.0 < v < 5.0 for v in losses), losses  # near ln 10 = 2.30 for random labels
    assert all(p.grad is not None for p in model.parameters())
