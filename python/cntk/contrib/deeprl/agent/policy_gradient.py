"""Advantage actor-critic policy gradient."""

import numpy as np

import cntk as C

from .agent import AgentBaseClass, linear_decay
from .shared.cntk_utils import negative_of_entropy_with_softmax
from .shared.models import Models
from .shared.policy_gradient_parameters import PolicyGradientParameters


class ActorCritic(AgentBaseClass):
    """Actor-critic with n-step returns (the single-worker form of A3C, Mnih et
    al. 2016, arXiv:1602.01783).

    The policy network outputs action logits; the value network estimates the
    state value V(s). Every ``UpdateFrequency`` steps the collected trajectory
    is turned into discounted returns R (bootstrapped from V of the last state
    when the episode goes on) and both networks take one joint Adam step on

        ``w * CE(logits, a) + beta * (-H(policy)) + c * (V(s) - R)^2``,

    where the advantage ``w = R - V(s)`` weighs the log-likelihood of the action
    taken, ``beta`` is ``RegularizationWeight`` (an entropy bonus against early
    collapse of the policy) and ``c`` is ``RelativeStepSize``.

    Args:
        config_filename (str): config file with the training settings.
        o_space: observation space.
        a_space: action space (``Discrete``).
    """

    def __init__(self, config_filename, o_space, a_space):
        super(ActorCritic, self).__init__(o_space, a_space)
        self._parameters = PolicyGradientParameters(config_filename)
        if self._parameters.preprocessing:
            self._create_preprocessor(self._parameters.preprocessing,
                                      self._parameters.preprocessing_args)
        self._set_up_policy_network_and_value_network()

        # The running trajectory: states and actions may be one step ahead of
        # rewards while the episode is under way.
        self._trajectory_states = []
        self._trajectory_actions = []
        self._trajectory_rewards = []

        # Training data gathered for the next update (all share the input).
        self._input_buffer = []
        self._value_network_output_buffer = []
        self._policy_network_output_buffer = []
        self._policy_network_weight_buffer = []

        self.episode_count = 0
        self.step_count = 0

    def start(self, state):
        # Whatever is left of the previous episode still makes training data.
        self._process_accumulated_trajectory(False)
        if self._preprocessor is not None:
            self._preprocessor.reset()
        o = self._preprocess_state(state)
        action, _ = self._choose_action(o)
        self._trajectory_states.append(o)
        self._trajectory_actions.append(action)
        self.episode_count += 1
        return action, {}

    def step(self, reward, next_state):
        o = self._preprocess_state(next_state)
        self._trajectory_rewards.append(reward)
        self._trajectory_states.append(o)
        self.step_count += 1
        if self.step_count % self._parameters.update_frequency == 0:
            # Keep the current state: the trajectory continues from it.
            self._process_accumulated_trajectory(True)
            self._update_networks()
        action, _ = self._choose_action(o)
        self._trajectory_actions.append(action)
        return action, {}

    def end(self, reward, next_state):
        self._trajectory_rewards.append(reward)
        self.step_count += 1
        if self.step_count % self._parameters.update_frequency == 0:
            self._process_accumulated_trajectory(False)
            self._update_networks()

    def set_as_best_model(self):
        self._best_model = self._policy_network.clone('clone')

    def save(self, filename):
        self._best_model.save(filename)

    def save_parameter_settings(self, filename):
        self._parameters.save(filename)

    def _build(self, representation, hidden_layers, number_of_outputs, what, *loss):
        """Model dict for 'nn' or a user model function; the input is a
        placeholder so that both networks can share one input variable."""
        shape = self._input_variables.shape
        if representation == 'nn':
            return Models.feedforward_network(
                shape, number_of_outputs, hidden_layers, *loss,
                use_placeholder_for_input=True)
        try:
            build = self._import_method(representation)
        except ValueError:
            raise ValueError('Unknown representation for {0}: "{1}"'.format(what, representation))
        return build(shape, number_of_outputs, *loss, use_placeholder_for_input=True)

    def _set_up_policy_network_and_value_network(self):
        p = self._parameters
        shape_of_inputs = self._shape_of_inputs if self._preprocessor is None \
            else self._preprocessor.output_shape()
        self._input_variables = C.ops.input_variable(shape=shape_of_inputs, dtype=np.float32)

        policy = self._build(p.policy_representation, p.policy_network_hidden_layers,
                             self._num_actions, 'policy', C.losses.cross_entropy_with_softmax)
        self._policy_network = policy['f']
        self._policy_network.replace_placeholder(self._input_variables)
        self._policy_network_output_variables = policy['outputs']
        self._policy_network_weight_variables = \
            C.ops.input_variable(shape=(1,), dtype=np.float32)
        self._policy_network_loss = policy['loss'] * self._policy_network_weight_variables
        if p.initial_policy_network:
            self._policy_network.restore(p.initial_policy_network)
        print('Parameterized the agent\'s policy using neural networks "{0}" with '
              '{1} actions.\n'.format(p.policy_representation, self._num_actions))

        if p.shared_representation:
            # The value head sits on top of the policy's logits layer, so all
            # of the policy network is shared.
            self._value_network = C.layers.Dense(1, activation=None)(self._policy_network)
            self._value_network_output_variables = \
                C.ops.input_variable(shape=(1,), dtype=np.float32)
            self._value_network_loss = C.losses.squared_error(
                self._value_network, self._value_network_output_variables)
        else:
            value = self._build(p.value_function_representation,
                                p.value_network_hidden_layers, 1, 'value function')
            self._value_network = value['f']
            self._value_network.replace_placeholder(self._input_variables)
            self._value_network_output_variables = value['outputs']
            self._value_network_loss = value['loss']

        networks = C.ops.combine([self._policy_network, self._value_network])
        loss = self._policy_network_loss \
            + p.regularization_weight * negative_of_entropy_with_softmax(self._policy_network) \
            + p.relative_step_size * self._value_network_loss
        # The learning rate is reset before every update (see _adjust_learning_rate).
        learner = C.learners.adam(
            networks.parameters,
            C.learners.learning_parameter_schedule_per_sample(p.initial_eta),
            momentum=C.learners.momentum_schedule(p.momentum),
            variance_momentum=C.learners.momentum_schedule(0.999),
            minibatch_size=C.learners.IGNORE)
        self._trainer = C.train.trainer.Trainer(networks, (loss, None), learner)
        print('Parameterized the agent\'s value function using neural network "{0}".\n'
              .format(p.policy_representation if p.shared_representation
                      else p.value_function_representation))

    def _adjust_learning_rate(self):
        p = self._parameters
        if p.initial_eta == p.eta_minimum:
            return
        eta = linear_decay(p.initial_eta, p.eta_minimum, p.eta_decay_step_count,
                           self.step_count)
        self._trainer.parameter_learners[0].reset_learning_rate(
            C.learners.learning_parameter_schedule_per_sample(eta))

    def _choose_action(self, state):
        """Sample an action from the policy; debug info is the distribution."""
        logits = self._evaluate_model(self._policy_network, state).astype(np.float64)
        probabilities = np.exp(logits - logits.max())
        probabilities /= probabilities.sum()
        return np.random.choice(self._num_actions, p=probabilities), probabilities

    def _evaluate_model(self, model, state):
        """Policy logits or value estimate of one state."""
        return np.squeeze(model.eval({model.arguments[0]: [state]}))

    def _process_accumulated_trajectory(self, keep_last):
        """Move the trajectory so far into the training buffers.

        Args:
            keep_last (bool): keep the last state (which has no reward yet) as
                the start of the next stretch of trajectory.
        """
        if not self._trajectory_states:
            return

        last_state = None
        if len(self._trajectory_states) == len(self._trajectory_rewards):
            # The episode ended: nothing to bootstrap from.
            bootstrap_r = 0
        else:
            # The episode goes on: its future is estimated by V(last state).
            bootstrap_r = np.asarray(self._evaluate_model(
                self._value_network, self._trajectory_states[-1])).item()
            last_state = self._trajectory_states.pop()
            if len(self._trajectory_actions) != len(self._trajectory_rewards):
                # start() began a new episode without end(): the action chosen
                # at the last state was never rewarded.
                self._trajectory_actions.pop()

        if not (len(self._trajectory_states) == len(self._trajectory_actions)
                == len(self._trajectory_rewards)):
            raise RuntimeError('Cannot pair states, actions and rewards: states '
                               'and actions may only be one step ahead of rewards.')

        returns = self._discount_rewards(bootstrap_r)
        for state, action, r in zip(self._trajectory_states, self._trajectory_actions, returns):
            self._input_buffer.append(state)
            self._value_network_output_buffer.append([r])
            self._policy_network_output_buffer.append(
                self._index_to_vector(action, self._num_actions))
            # Advantage of the action taken over the state's estimated value.
            self._policy_network_weight_buffer.append(
                [r - self._evaluate_model(self._value_network, state)])

        self._trajectory_states = [last_state] if keep_last else []
        self._trajectory_actions = []
        self._trajectory_rewards = []

    def _update_networks(self):
        """One joint training step on the buffered data, which is then dropped."""
        self._adjust_learning_rate()
        self._trainer.train_minibatch({
            self._input_variables:
                np.array(self._input_buffer).astype(np.float32),
            self._policy_network_output_variables:
                np.array(self._policy_network_output_buffer).astype(np.float32),
            self._policy_network_weight_variables:
                np.array(self._policy_network_weight_buffer).astype(np.float32),
            self._value_network_output_variables:
                np.array(self._value_network_output_buffer).astype(np.float32),
        })
        self._input_buffer = []
        self._value_network_output_buffer = []
        self._policy_network_output_buffer = []
        self._policy_network_weight_buffer = []

    def _discount_rewards(self, bootstrap_r):
        """Discounted return from every step: ``R_t = r_t + gamma * R_{t+1}``."""
        returns = [0] * len(self._trajectory_rewards)
        r = bootstrap_r
        for t in reversed(range(len(self._trajectory_rewards))):
            r = r * self._parameters.gamma + self._trajectory_rewards[t]
            returns[t] = r
        return returns
