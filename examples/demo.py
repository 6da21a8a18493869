"""kiln's main demo: the seed article's MLP (784-128-10, Adam) trained on a
learnable synthetic task, with a progress bar and the falling loss.

The task: ten classes of Gaussian blobs in 784 dimensions (each class a random
centre drawn with kiln's generator, each sample its centre plus unit noise), so
the loss starts near ln 10 and falls as the model learns the centres.
"""

import math
import sys
import time

from tqdm import tqdm

import kiln
import kiln.nn as nn
from kiln.utils.data import DataLoader, TensorDataset

SAMPLES, FEATURES, CLASSES = 4096, 784, 10
EPOCHS, BATCH = 3, 64
SEPARATION = 0.07  # the centres' scale: small enough that one step does not solve the task


def make_blobs(generator):
    centres = kiln.randn(CLASSES, FEATURES, generator=generator) * SEPARATION
    labels = kiln.randint(0, CLASSES, (SAMPLES,), generator=generator)
    noise = kiln.randn(SAMPLES, FEATURES, generator=generator)
    return centres.index_select(0, labels) + noise, labels


def accuracy(model, x, y) -> float:
    with kiln.no_grad():
        predicted = model(x).numpy().argmax(axis=1)
    return float((predicted == y.numpy()).mean())


def main() -> int:
    print(f"== kiln {kiln.__version__}: training the seed's MLP on {CLASSES} Gaussian blobs ==")
    kiln.manual_seed(0)
    generator = kiln.Generator()
    generator.manual_seed(1234)
    x, y = make_blobs(generator)
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, generator=generator)

    model = nn.Sequential(
        nn.Linear(784, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )
    print(model)
    opt = kiln.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    print(f"accuracy before training: {accuracy(model, x, y):.1%} (chance is {1 / CLASSES:.0%}); "
          f"ln {CLASSES} = {math.log(CLASSES):.3f}")

    start = time.perf_counter()
    for epoch in range(EPOCHS):
        losses = []
        bar = tqdm(loader, desc=f"epoch {epoch + 1}/{EPOCHS}", unit="batch", leave=True, file=sys.stdout)
        for xb, yb in bar:
            pred = model(xb)
            loss = loss_fn(pred, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
        print(f"epoch {epoch + 1}: mean loss {sum(losses) / len(losses):.4f} "
              f"(first batch {losses[0]:.4f}, last {losses[-1]:.4f})")
    elapsed = time.perf_counter() - start
    steps = EPOCHS * len(loader)
    print(f"{steps} steps in {elapsed:.1f} s ({1e3 * elapsed / steps:.2f} ms per step)")
    print(f"final train accuracy: {accuracy(model, x, y):.1%}")
    print("(the tensor-core tour that was the demo before: .venv/bin/python examples/tour.py)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except NotImplementedError as error:  # an op this build does not have yet
        print(f"\nthe demo needs an op this build of kiln does not have yet: {error}", file=sys.stderr)
        sys.exit(1)
