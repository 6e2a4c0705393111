"""Agents: tabular and deep Q-learning, actor-critic and a random baseline."""
