"""Recognition of gym observation/action spaces without importing gym.

The agents only need to know which kind of space they were given, so they look
at the class's module path instead of depending on gym (or gymnasium) itself.
"""

# Module paths (minus the package root) of the space classes the agents know.
_KNOWN = {
    'spaces.box.Box': 'Box',
    'spaces.discrete.Discrete': 'Discrete',
    'spaces.multi_binary.MultiBinary': 'MultiBinary',
    'spaces.multi_discrete.MultiDiscrete': 'MultiDiscrete',
    'spaces.tuple_space.Tuple': 'Tuple',
    'spaces.tuple.Tuple': 'Tuple',
}


def space_kind(space):
    """Return 'Box', 'Discrete', 'MultiBinary', 'MultiDiscrete' or 'Tuple' for
    a gym/gymnasium space, or None for anything else."""
    cls = type(space)
    path = '{0}.{1}'.format(cls.__module__, cls.__name__)
    root, _, rest = path.partition('.')
    if root not in ('gym', 'gymnasium'):
        return None
    return _KNOWN.get(rest)
