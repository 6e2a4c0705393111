"""Settings of the Q-learning agents (tabular and deep)."""

import ast

import numpy as np

from .config_parameters import ConfigParameters


class QLearningParameters(ConfigParameters):
    """Q-learning settings read from a config file.

    Sections and keys (defaults in brackets):

    ``[General]``
        ``Gamma`` (0.95) discount factor; ``PreProcessing`` ('') dotted name
        of a :mod:`~.preprocessing` class; ``PreProcessingArgs`` ('()') Python
        tuple of its arguments after the input shape.
    ``[QLearningAlgo]``
        ``QRepresentation`` ('tabular'): 'tabular', 'dqn', 'dueling-dqn' or the
        dotted name of a model function; ``InitialQ`` (0.0) initial table value;
        ``DiscretizationResolution`` ('10') bins per dimension, a number or a
        list; ``InitialEpsilon`` (0.1), ``EpsilonDecayStepCount`` (100000),
        ``EpsilonMinimum`` (0.01) linearly decayed exploration rate;
        ``TargetQUpdateFrequency`` (10000) steps between target-network copies;
        ``MinibatchSize`` (32); ``ReplaysPerUpdate`` (1); ``QUpdateFrequency``
        (4) steps between updates; ``ErrorClipping`` (True) Huber instead of
        squared loss; ``DoubleQLearning`` (False).
    ``[ExperienceReplay]``
        ``Capacity`` (100000); ``StartSize`` (5000) steps of random play
        before learning; ``Prioritized`` (False); ``PriorityAlpha`` (0.7),
        ``PriorityBeta`` (0.5), ``PriorityEpsilon`` (0.01).
    ``[NetworkModel]``
        ``HiddenLayerNodes`` ('[20]') hidden layer widths.
    ``[Optimization]``
        ``InitialEta`` (0.001), ``EtaDecayStepCount`` (100000), ``EtaMinimum``
        (0.001) linearly decayed learning rate; ``Momentum`` (0.95);
        ``GradientClippingThreshold`` (inf, no clipping) per-sample gradient norm.
    """

    SETTINGS = (
        ('gamma', 'General', 'Gamma', float, 0.95),
        ('preprocessing', 'General', 'PreProcessing', str, ''),
        ('preprocessing_args', 'General', 'PreProcessingArgs', str, '()'),
        ('q_representation', 'QLearningAlgo', 'QRepresentation', str, 'tabular'),
        ('initial_epsilon', 'QLearningAlgo', 'InitialEpsilon', float, 0.1),
        ('epsilon_decay_step_count', 'QLearningAlgo', 'EpsilonDecayStepCount', int, 100000),
        ('epsilon_minimum', 'QLearningAlgo', 'EpsilonMinimum', float, 0.01),
        ('initial_eta', 'Optimization', 'InitialEta', float, 0.001),
        ('eta_decay_step_count', 'Optimization', 'EtaDecayStepCount', int, 100000),
        ('eta_minimum', 'Optimization', 'EtaMinimum', float, 0.001),
        ('momentum', 'Optimization', 'Momentum', float, 0.95),
        ('initial_q', 'QLearningAlgo', 'InitialQ', float, 0.0),
        ('discretization_resolution', 'QLearningAlgo', 'DiscretizationResolution', str, '10'),
        ('target_q_update_frequency', 'QLearningAlgo', 'TargetQUpdateFrequency', int, 10000),
        ('minibatch_size', 'QLearningAlgo', 'MinibatchSize', int, 32),
        ('replays_per_update', 'QLearningAlgo', 'ReplaysPerUpdate', int, 1),
        ('q_update_frequency', 'QLearningAlgo', 'QUpdateFrequency', int, 4),
        ('use_error_clipping', 'QLearningAlgo', 'ErrorClipping', bool, True),
        ('replay_memory_capacity', 'ExperienceReplay', 'Capacity', int, 100000),
        ('replay_start_size', 'ExperienceReplay', 'StartSize', int, 5000),
        ('use_prioritized_replay', 'ExperienceReplay', 'Prioritized', bool, False),
        ('priority_alpha', 'ExperienceReplay', 'PriorityAlpha', float, 0.7),
        ('priority_beta', 'ExperienceReplay', 'PriorityBeta', float, 0.5),
        ('priority_epsilon', 'ExperienceReplay', 'PriorityEpsilon', float, 0.01),
        ('hidden_layers', 'NetworkModel', 'HiddenLayerNodes', str, '[20]'),
        ('gradient_clipping_threshold', 'Optimization', 'GradientClippingThreshold',
         float, np.inf),
        ('double_q_learning', 'QLearningAlgo', 'DoubleQLearning', bool, False),
    )

    def __init__(self, config_file):
        super(QLearningParameters, self).__init__(config_file)
        # A number applies to every dimension; a list gives one per dimension.
        resolution = ast.literal_eval(self.discretization_resolution)
        if isinstance(resolution, (list, tuple)):
            resolution = np.array(resolution)
        self.discretization_resolution = resolution
