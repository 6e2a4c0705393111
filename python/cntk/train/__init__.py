"""Training: the Trainer, which runs minibatches and updates parameters with learners,
and the training session that loops over a minibatch source."""
from .trainer import *  # noqa: F401,F403
from .training_session import *  # noqa: F401,F403
from . import distributed  # noqa: F401
from .distributed import *  # noqa: F401,F403
from .declarative import train as _function_train, test as _function_test
from ..ops.functions import Function as _Function

_Function.train = _function_train
_Function.test = _function_test
