"""The interface every agent implements, and the observation handling they share."""

import ast
from abc import ABC, abstractmethod
from importlib import import_module

import numpy as np

from .shared.discretize import BoxSpaceDiscretizer
from .shared.spaces import space_kind


def linear_decay(initial, minimum, decay_steps, step):
    """Value decaying linearly from ``initial`` at step 0 to ``minimum`` at
    ``decay_steps``, and constant afterwards (exploration and learning rates)."""
    return minimum + max(0, (initial - minimum) * (1 - float(step) / decay_steps))


class AgentBaseClass(ABC):
    """Base class of the agents.

    An episode is driven by the environment loop as
    ``a = start(s0)``, then ``a = step(r, s)`` for each transition, then
    ``end(r, s_final)``. ``start`` and ``step`` return ``(action, debug_info)``.

    Observations are handled in one of three ways, set up here:

    1. ``Discrete(n)`` spaces: the state is an index in ``[0, n)``
       (``_discrete_observation_space`` is True, ``_num_states`` is n).
    2. ``Box`` spaces that a tabular agent discretizes with
       :meth:`_discretize_observation_space`, after which they behave as 1.
    3. Raw arrays (``Box``, ``MultiBinary``, ``MultiDiscrete``), fed to a network
       as they are (``_num_states`` is None).

    For 1 and 2 ``_shape_of_inputs`` is ``(n,)``, the one-hot encoding a
    network sees; for 3 it is the observation's shape.

    Args:
        o_space: observation space (gym ``Tuple`` spaces are not supported).
        a_space: action space; must be gym ``Discrete``.
    """

    def __init__(self, o_space, a_space):
        if space_kind(a_space) != 'Discrete':
            raise ValueError('Unsupported action space {0} for {1}: only '
                             'Discrete action spaces are supported.'
                             .format(a_space, type(self).__name__))
        self._num_actions = a_space.n

        observation_kind = space_kind(o_space)
        if observation_kind not in ('Discrete', 'MultiBinary', 'Box', 'MultiDiscrete'):
            raise ValueError('Unsupported observation space type: {0}'.format(o_space))
        self._discrete_observation_space = observation_kind == 'Discrete'
        self._num_states = o_space.n if self._discrete_observation_space else None
        if observation_kind in ('Discrete', 'MultiBinary'):
            self._shape_of_inputs = (o_space.n,)
        else:
            self._shape_of_inputs = tuple(o_space.shape)

        self._space_discretizer = None
        self._preprocessor = None
        self._best_model = None

    @abstractmethod
    def start(self, state):
        """Begin an episode at observation ``state``; return (action, debug_info)."""

    @abstractmethod
    def step(self, reward, next_state):
        """Observe ``reward`` for the last action and the new observation;
        return (action, debug_info)."""

    @abstractmethod
    def end(self, reward, next_state):
        """Observe the final reward and observation of the episode."""

    @abstractmethod
    def save(self, filename):
        """Write the best model (see :meth:`set_as_best_model`) to a file."""

    @abstractmethod
    def save_parameter_settings(self, filename):
        """Write the agent's settings to a config file."""

    @abstractmethod
    def set_as_best_model(self):
        """Remember the current model as the best one so far."""

    def enter_evaluation(self):
        """Prepare for evaluation (e.g. stop exploring)."""

    def exit_evaluation(self):
        """Return to training after evaluation."""

    def evaluate(self, o):
        """Action the agent would take at observation ``o``, learning nothing."""
        action, _ = self._choose_action(self._preprocess_state(o))
        return action

    @abstractmethod
    def _choose_action(self, state):
        """Pick an action for a preprocessed state; return (action, debug_info)."""

    def _discretize_observation_space(self, space, discretization_resolution):
        """Switch a ``Box`` observation space to handling case 2 (see class doc)."""
        if space_kind(space) != 'Box':
            raise ValueError('Unsupported space type for discretization: {0}'.format(space))
        self._space_discretizer = BoxSpaceDiscretizer(space, discretization_resolution)
        self._discrete_observation_space = True
        self._num_states = self._space_discretizer.num_states
        self._shape_of_inputs = (self._num_states,)

    def _discretize_state_if_necessary(self, state):
        if self._space_discretizer is None:
            return state
        return self._space_discretizer.discretize(state)

    def _index_to_vector(self, index, dimension):
        """One-hot vector of length ``dimension``."""
        vector = np.zeros(dimension)
        vector[index] = 1
        return vector

    def _preprocess_state(self, state):
        """Turn an observation into a network input (float32 array).

        State indices are one-hot encoded, then the configured preprocessor
        (if any) is applied.
        """
        o = self._discretize_state_if_necessary(state)
        if self._discrete_observation_space:
            o = self._index_to_vector(o, self._num_states)
        if self._preprocessor is not None:
            o = self._preprocessor.preprocess(o)
        return np.asarray(o, dtype=np.float32)

    def _create_preprocessor(self, name, args):
        """Instantiate preprocessing class ``name`` (dotted path) with the
        observation shape followed by the Python tuple literal ``args``."""
        preprocessor_class = self._import_method(name)
        self._preprocessor = preprocessor_class(
            self._shape_of_inputs, *ast.literal_eval(args))

    def _classname(self, instance):
        return '{0}.{1}'.format(type(instance).__module__, type(instance).__name__)

    def _import_method(self, path):
        """Resolve ``'package.module.name'`` to the named object."""
        module_name, _, attribute = path.rpartition('.')
        try:
            return getattr(import_module(module_name), attribute)
        except (AttributeError, ImportError, ValueError):
            raise ValueError('Cannot import method: "{0}"'.format(path))
