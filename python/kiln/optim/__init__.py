"""kiln.optim: optimizers with PyTorch's signatures and trajectories."""

from kiln.optim.adam import Adam, AdamW
from kiln.optim.optimizer import Optimizer
from kiln.optim.sgd import SGD
from kiln.optim import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
