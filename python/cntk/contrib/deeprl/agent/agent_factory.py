"""Creating the agent that a config file asks for."""

import configparser

from .policy_gradient import ActorCritic
from .qlearning import QLearning
from .random_agent import RandomAgent
from .tabular_qlearning import TabularQLearning


def make_agent(agent_config, o_space, a_space):
    """Build the agent named by ``Agent`` in the ``[General]`` section of the
    config file ``agent_config``: 'qlearning', 'actor_critic',
    'tabular_qlearning' or 'random' (the default). The same file configures
    the agent. Returns None for an unknown name.
    """
    config = configparser.ConfigParser()
    config.read(agent_config)
    agent_type = config.get('General', 'Agent', fallback='random').lower()
    if agent_type == 'random':
        return RandomAgent(o_space, a_space)
    factories = {
        'qlearning': QLearning,
        'actor_critic': ActorCritic,
        'tabular_qlearning': TabularQLearning,
    }
    factory = factories.get(agent_type)
    return None if factory is None else factory(agent_config, o_space, a_space)
