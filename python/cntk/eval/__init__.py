"""Evaluation of a model's metric over minibatches."""
from .evaluator import *  # noqa: F401,F403
