"""Deep Q-learning (DQN) and its common refinements."""

import math

import numpy as np

import cntk as C

from .agent import AgentBaseClass, linear_decay
from .shared.cntk_utils import huber_loss
from .shared.models import Models
from .shared.qlearning_parameters import QLearningParameters
from .shared.replay_memory import ReplayMemory


class QLearning(AgentBaseClass):
    """Q-learning with a neural network approximating Q.

    Implements DQN (Mnih et al. 2015: experience replay and a periodically
    copied target network) with optional prioritized replay (Schaul et al.
    2016), dueling networks (Wang et al. 2016) and double Q-learning
    (van Hasselt et al. 2016), all chosen through the config file (see
    :class:`~.shared.qlearning_parameters.QLearningParameters`).

    Args:
        config_filename (str): config file with the training settings.
        o_space: observation space.
        a_space: action space (``Discrete``).
    """

    def __init__(self, config_filename, o_space, a_space):
        super(QLearning, self).__init__(o_space, a_space)
        self._parameters = QLearningParameters(config_filename)
        p = self._parameters

        if p.preprocessing:
            try:
                self._import_method(p.preprocessing)
            except ValueError:
                raise ValueError('Unknown preprocessing method: "{0}"'.format(p.preprocessing))
            self._create_preprocessor(p.preprocessing, p.preprocessing_args)

        model = self._build_model()
        self._q = model['f']
        self._input_variables = model['inputs']
        self._output_variables = model['outputs']
        if p.use_prioritized_replay:
            # Importance-sampling weights correct for the non-uniform sampling.
            self._weight_variables = C.ops.input_variable(shape=(1,), dtype=np.float32)
            self._loss = model['loss'] * self._weight_variables
        else:
            self._loss = model['loss']

        # Clipping is by norm (no truncation); an infinite threshold disables it.
        learner = C.learners.adam(
            self._q.parameters,
            C.learners.learning_parameter_schedule_per_sample(p.initial_eta),
            use_mean_gradient=True,
            momentum=C.learners.momentum_schedule(p.momentum),
            variance_momentum=C.learners.momentum_schedule(0.999),
            gradient_clipping_threshold_per_sample=p.gradient_clipping_threshold,
            gradient_clipping_with_truncation=False)
        self._trainer = C.train.trainer.Trainer(self._q, (self._loss, None), learner)

        # Targets are computed from a frozen copy, refreshed every
        # TargetQUpdateFrequency steps, which keeps the regression stable.
        self._target_q = self._q.clone('clone')
        self._replay_memory = ReplayMemory(p.replay_memory_capacity, p.use_prioritized_replay)

        print('Parameterized Q-learning agent using neural networks "{0}" with '
              '{1} actions.\n'.format(p.q_representation, self._num_actions))
        self.episode_count = 0
        self.step_count = 0

    def _build_model(self):
        p = self._parameters
        shape = self._shape_of_inputs if self._preprocessor is None \
            else self._preprocessor.output_shape()
        loss = huber_loss if p.use_error_clipping else None
        if p.q_representation == 'dqn':
            return Models.feedforward_network(shape, self._num_actions, p.hidden_layers, loss)
        if p.q_representation == 'dueling-dqn':
            return Models.dueling_network(shape, self._num_actions, p.hidden_layers, loss)
        try:
            build = self._import_method(p.q_representation)
        except ValueError:
            raise ValueError('Unknown representation for Q-learning: "{0}"'
                             .format(p.q_representation))
        return build(shape, self._num_actions, loss)

    def start(self, state):
        if self._preprocessor is not None:
            self._preprocessor.reset()
        self._adjust_exploration_rate()
        self._last_state = self._preprocess_state(state)
        self._last_action, behavior = self._choose_action(self._last_state)
        self.episode_count += 1
        return self._last_action, {'action_behavior': behavior, 'epsilon': self._epsilon}

    def step(self, reward, next_state):
        next_input = self._preprocess_state(next_state)
        self._remember(reward, next_input)
        self._update_q_periodically()

        self._adjust_exploration_rate()
        self._last_state = next_input
        self._last_action, behavior = self._choose_action(self._last_state)
        return self._last_action, {'action_behavior': behavior, 'epsilon': self._epsilon}

    def end(self, reward, next_state):
        # A terminal transition is stored without a next state.
        self._remember(reward, None)
        self._update_q_periodically()

    def _remember(self, reward, next_input):
        """Store the transition out of the last state and count the step."""
        priority = self._compute_priority(
            self._last_state, self._last_action, reward, next_input)
        self._replay_memory.store(
            self._last_state, self._last_action, reward, next_input, priority)
        self.step_count += 1

    def set_as_best_model(self):
        self._best_model = self._q.clone('clone')

    def save(self, filename):
        self._best_model.save(filename)

    def save_parameter_settings(self, filename):
        self._parameters.save(filename)

    def enter_evaluation(self):
        self._epsilon = 0

    def _adjust_learning_rate(self):
        p = self._parameters
        if p.initial_eta == p.eta_minimum:
            return
        eta = linear_decay(p.initial_eta, p.eta_minimum, p.eta_decay_step_count,
                           self.step_count)
        self._trainer.parameter_learners[0].reset_learning_rate(
            C.learners.learning_parameter_schedule_per_sample(eta))

    def _adjust_exploration_rate(self):
        p = self._parameters
        self._epsilon = linear_decay(p.initial_epsilon, p.epsilon_minimum,
                                     p.epsilon_decay_step_count, self.step_count)

    def _choose_action(self, state):
        """Epsilon-greedy; purely random until the replay memory is warmed up."""
        if self.step_count < self._parameters.replay_start_size or \
                np.random.uniform(0, 1) < self._epsilon:
            return np.random.randint(self._num_actions), 'RANDOM'
        return np.argmax(self._evaluate_q(self._q, state)), 'GREEDY'

    def _evaluate_q(self, model, state, action=None):
        """Q values of ``state`` under ``model``: all actions, or one."""
        # Float64, so that TD errors and priorities are not rounded to float32.
        q = np.squeeze(model.eval({model.arguments[0]: [state]})).astype(np.float64)
        return q if action is None else q[action]

    def _update_q_periodically(self):
        p = self._parameters
        if self.step_count < p.replay_start_size or self.step_count % p.q_update_frequency != 0:
            return
        self._adjust_learning_rate()
        for _ in range(p.replays_per_update):
            self._replay_and_update()
        if self.step_count % p.target_q_update_frequency == 0:
            self._target_q = self._q.clone('clone')

    def _replay_and_update(self):
        """One SGD step on a minibatch drawn from the replay memory.

        The regression target equals the current Q values except at the action
        taken, where the temporal-difference error is added; so only that
        action's output receives a gradient.
        """
        p = self._parameters
        minibatch = self._replay_memory.sample_minibatch(p.minibatch_size)
        inputs, targets, weights = [], [], []
        for _, t in minibatch:
            # A fresh float64 array (astype copies), safe to edit in place.
            target = self._evaluate_q(self._q, t.state)
            target[t.action] += self._compute_td_err(t.state, t.action, t.reward, t.next_state)
            inputs.append(t.state)
            targets.append(target)
            if p.use_prioritized_replay:
                weights.append(math.pow(t.priority, -p.priority_beta))

        arguments = {
            self._input_variables: np.array(inputs).astype(np.float32),
            self._output_variables: np.array(targets).astype(np.float32),
        }
        if p.use_prioritized_replay:
            total = sum(weights)
            arguments[self._weight_variables] = \
                np.array([[w / total] for w in weights]).astype(np.float32)
        self._trainer.train_minibatch(arguments)

        if p.use_prioritized_replay:
            self._replay_memory.update_priority({
                position: self._compute_priority(t.state, t.action, t.reward, t.next_state)
                for position, t in minibatch})

    def _compute_td_err(self, state, action, reward, next_state):
        """``r + gamma * Q_target(s', a*) - Q(s, a)`` (no bootstrap at the end).

        ``a*`` maximizes the target network's values, or the online network's
        ones with double Q-learning, which reduces the overestimation bias.
        """
        p = self._parameters
        td_err = reward
        if next_state is not None:
            if p.double_q_learning:
                best = np.argmax(self._evaluate_q(self._q, next_state))
                td_err += p.gamma * self._evaluate_q(self._target_q, next_state, best)
            else:
                td_err += p.gamma * np.max(self._evaluate_q(self._target_q, next_state))
        return td_err - self._evaluate_q(self._q, state, action)

    def _compute_priority(self, state, action, reward, next_state):
        """``(|td error| + epsilon) ** alpha`` for prioritized replay, else None."""
        p = self._parameters
        if not p.use_prioritized_replay:
            return None
        td_err = self._compute_td_err(state, action, reward, next_state)
        return math.pow(math.fabs(td_err) + p.priority_epsilon, p.priority_alpha)
