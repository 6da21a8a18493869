"""kiln.optim: optimizers with PyTorch's signatures and trajectories."""

from kiln.optim.adam import Adam, AdamW
from kiln.optim.optimizer import Optimizer
from kiln.optim.sgd import SGD
from kiln.optim import lr_scheduler
from kiln.optim.rmsprop import RMSprop
from kiln.optim.adagrad import Adagrad

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler", "RMSprop", "Adagrad"]
