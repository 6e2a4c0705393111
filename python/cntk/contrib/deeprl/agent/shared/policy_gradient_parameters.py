"""Settings of the actor-critic (policy gradient) agent."""

from .config_parameters import ConfigParameters


class PolicyGradientParameters(ConfigParameters):
    """Actor-critic settings read from a config file.

    Sections and keys (defaults in brackets):

    ``[General]``
        ``Gamma`` (0.95), ``PreProcessing`` (''), ``PreProcessingArgs`` ('()')
        as for Q-learning.
    ``[PolicyGradient]``
        ``SharedRepresentation`` (False): the value function is the policy
        network's hidden part plus its own linear output; otherwise it is a
        separate network. ``PolicyRepresentation`` ('nn') and
        ``ValueFunctionRepresentation`` ('nn'): 'nn' or the dotted name of a
        model function. ``RelativeStepSize`` (0.5) weight of the value loss
        against the policy loss. ``RegularizationWeight`` (0.001) weight of the
        entropy bonus. ``UpdateFrequency`` (64) steps between updates.
        ``InitialPolicy`` ('') file of a saved policy network to start from.
    ``[NetworkModel]``
        ``PolicyNetworkHiddenLayerNodes`` ('[10]'),
        ``ValueNetworkHiddenLayerNodes`` ('[10]').
    ``[Optimization]``
        ``InitialEta`` (0.001), ``EtaDecayStepCount`` (100000), ``EtaMinimum``
        (0.001), ``Momentum`` (0.95), for Adam.
    """

    SETTINGS = (
        ('gamma', 'General', 'Gamma', float, 0.95),
        ('preprocessing', 'General', 'PreProcessing', str, ''),
        ('preprocessing_args', 'General', 'PreProcessingArgs', str, '()'),
        ('shared_representation', 'PolicyGradient', 'SharedRepresentation', bool, False),
        ('policy_representation', 'PolicyGradient', 'PolicyRepresentation', str, 'nn'),
        ('relative_step_size', 'PolicyGradient', 'RelativeStepSize', float, 0.5),
        ('regularization_weight', 'PolicyGradient', 'RegularizationWeight', float, 0.001),
        ('policy_network_hidden_layers', 'NetworkModel', 'PolicyNetworkHiddenLayerNodes',
         str, '[10]'),
        ('value_function_representation', 'PolicyGradient', 'ValueFunctionRepresentation',
         str, 'nn'),
        ('value_network_hidden_layers', 'NetworkModel', 'ValueNetworkHiddenLayerNodes',
         str, '[10]'),
        ('initial_eta', 'Optimization', 'InitialEta', float, 0.001),
        ('eta_decay_step_count', 'Optimization', 'EtaDecayStepCount', int, 100000),
        ('eta_minimum', 'Optimization', 'EtaMinimum', float, 0.001),
        ('momentum', 'Optimization', 'Momentum', float, 0.95),
        ('update_frequency', 'PolicyGradient', 'UpdateFrequency', int, 64),
        ('initial_policy_network', 'PolicyGradient', 'InitialPolicy', str, ''),
    )
