"""Reinforcement learning agents (Q-learning, actor-critic) built on CNTK.

Agents follow OpenAI gym's conventions: observation and action spaces are gym
space objects, and an episode is driven through ``start``, ``step`` and ``end``.
"""
