"""Training: the Trainer, which runs minibatches and updates parameters with learners."""
from .trainer import *  # noqa: F401,F403
