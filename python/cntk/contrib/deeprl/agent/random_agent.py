"""Baseline agent acting uniformly at random."""

import numpy as np

from .agent import AgentBaseClass


class RandomAgent(AgentBaseClass):
    """Chooses every action uniformly at random and learns nothing; a baseline
    for judging the other agents."""

    def __init__(self, o_space, a_space):
        super(RandomAgent, self).__init__(o_space, a_space)
        print('Initialized random agent with {0} actions.'.format(self._num_actions))
        self.episode_count = 0
        # Counts rewards received (transitions), as for the learning agents.
        self.step_count = 0

    def start(self, state):
        self.episode_count += 1
        action, _ = self._choose_action(state)
        return action, {}

    def step(self, reward, next_state):
        self.step_count += 1
        action, _ = self._choose_action(next_state)
        return action, {}

    def end(self, reward, next_state):
        self.step_count += 1

    def set_as_best_model(self):
        pass

    def save(self, filename):
        pass

    def save_parameter_settings(self, filename):
        pass

    def _choose_action(self, state):
        return np.random.randint(self._num_actions), 'RANDOM'
