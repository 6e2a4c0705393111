"""Q-learning with a table of Q values."""

import copy

import numpy as np

from .agent import AgentBaseClass, linear_decay
from .shared.qlearning_parameters import QLearningParameters


class TabularQLearning(AgentBaseClass):
    """Q-learning over a ``num_states x num_actions`` table.

    Needs a finite state set: a ``Discrete`` observation space, or a ``Box``
    space discretized with ``DiscretizationResolution`` bins per dimension.
    Acts epsilon-greedily; exploration rate and learning rate decay linearly
    with the number of steps (see :class:`QLearningParameters`).

    Args:
        cfg_filename (str): config file (``QRepresentation`` must be 'tabular').
        o_space: observation space.
        a_space: action space (``Discrete``).
    """

    def __init__(self, cfg_filename, o_space, a_space):
        super(TabularQLearning, self).__init__(o_space, a_space)
        self._parameters = QLearningParameters(cfg_filename)
        if self._parameters.q_representation != 'tabular':
            raise ValueError('Unexpected representation for tabular Q-learning: '
                             '"{0}"'.format(self._parameters.q_representation))
        if not self._discrete_observation_space:
            self._discretize_observation_space(
                o_space, self._parameters.discretization_resolution)

        self._q = self._parameters.initial_q + np.zeros(
            (self._num_states, self._num_actions))
        print('Initialized discrete Q-learning agent with {0} states and {1} '
              'actions.'.format(self._num_states, self._num_actions))
        self.episode_count = 0
        # Incremented for every reward received.
        self.step_count = 0

    def start(self, state):
        self._adjust_exploration_rate()
        self._last_state = self._preprocess_state(state)
        self._last_action, behavior = self._choose_action(self._last_state)
        self.episode_count += 1
        return self._last_action, {'action_behavior': behavior, 'epsilon': self._epsilon}

    def step(self, reward, next_state):
        self._adjust_learning_rate()
        self.step_count += 1
        next_index = self._preprocess_state(next_state)
        # Bootstrapped one-step target: r + gamma * max_a Q(s', a).
        target = reward + self._parameters.gamma * np.max(self._q[next_index])
        self._update_table(target)

        self._adjust_exploration_rate()
        self._last_state = next_index
        self._last_action, behavior = self._choose_action(self._last_state)
        return self._last_action, {'action_behavior': behavior, 'epsilon': self._epsilon}

    def end(self, reward, next_state):
        self._adjust_learning_rate()
        self.step_count += 1
        # Terminal transition: nothing follows, the target is the reward alone.
        self._update_table(reward)

    def _update_table(self, target):
        entry = (self._last_state, self._last_action)
        self._q[entry] += self._eta * (target - self._q[entry])

    def set_as_best_model(self):
        self._best_model = copy.deepcopy(self._q)

    def save(self, filename):
        """Write the best table, one ``state<TAB>[q values]`` line per state."""
        with open(filename, 'w') as f:
            for state in range(self._num_states):
                f.write('{0}\t{1}\n'.format(state, str(self._best_model[state])))

    def save_parameter_settings(self, filename):
        self._parameters.save(filename)

    def enter_evaluation(self):
        self._epsilon = 0

    def _adjust_learning_rate(self):
        p = self._parameters
        self._eta = linear_decay(
            p.initial_eta, p.eta_minimum, p.eta_decay_step_count, self.step_count)

    def _adjust_exploration_rate(self):
        p = self._parameters
        self._epsilon = linear_decay(
            p.initial_epsilon, p.epsilon_minimum, p.epsilon_decay_step_count,
            self.step_count)

    def _choose_action(self, state):
        """Epsilon-greedy with respect to the table."""
        if np.random.uniform(0, 1) < self._epsilon:
            return np.random.randint(self._num_actions), 'RANDOM'
        return np.argmax(self._q[state]), 'GREEDY'

    def _preprocess_state(self, state):
        # The table is indexed by the state number itself, not a one-hot vector.
        return self._discretize_state_if_necessary(state)
