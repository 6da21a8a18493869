"""kiln.optim: optimizers with PyTorch's signatures and trajectories."""

from kiln.optim.adam import Adam, AdamW
from kiln.optim.optimizer import Optimizer
from kiln.optim.sgd import SGD
from kiln.optim import lr_scheduler
from kiln.optim.rmsprop import RMSprop
from kiln.optim.adagrad import Adagrad
from kiln.optim.adadelta import Adadelta
from kiln.optim.adafactor import Adafactor
from kiln.optim.adamax import Adamax
from kiln.optim.asgd import ASGD
from kiln.optim.lbfgs import LBFGS
from kiln.optim.muon import Muon
from kiln.optim.nadam import NAdam
from kiln.optim.radam import RAdam
from kiln.optim.rprop import Rprop
from kiln.optim.sparse_adam import SparseAdam
from kiln.optim._stateless import swap_in_optimizer_params_and_state
from kiln.optim import swa_utils

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler", "RMSprop", "Adagrad", "Adadelta", "Adafactor",
           "Adamax", "ASGD", "LBFGS", "Muon", "NAdam", "RAdam", "Rprop", "SparseAdam",
           "swap_in_optimizer_params_and_state", "swa_utils"]
