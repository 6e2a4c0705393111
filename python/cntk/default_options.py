"""default_options: scoped defaults for layer arguments (CNTK's layers use them).

    with default_options(activation=relu, init=he_normal()):
        model = Sequential([Dense(100), Dense(10, activation=None)])

A layer argument declared as `default_override_or(value)` takes the innermost
override in effect (for that layer, or for all layers), else `value`.
"""
import contextlib

_stack = []          # entries: (set of functions or None for all, {name: value})
_global_options = {}


class default_override_or(object):
    """Marks a layer argument's default value as overridable by default_options."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return "default_override_or(%r)" % (self.value,)


def is_default_override(value):
    """True when `value` is an overridable default (not given by the caller)."""
    return isinstance(value, default_override_or)


@contextlib.contextmanager
def default_options(**kwargs):
    """Within the `with` block, layer arguments not given explicitly take these values."""
    _stack.append((None, kwargs))
    try:
        yield
    finally:
        _stack.pop()


@contextlib.contextmanager
def default_options_for(functions, **kwargs):
    """Like default_options, for the given layer functions only."""
    if not isinstance(functions, (list, tuple, set)):
        functions = [functions]
    _stack.append((set(functions), kwargs))
    try:
        yield
    finally:
        _stack.pop()


def get_default_override(function_or_class, **kwargs):
    """Resolves one argument: `get_default_override(Dense, activation=activation)`."""
    if len(kwargs) != 1:
        raise TypeError("get_default_override takes exactly one keyword argument")
    (name, value), = kwargs.items()
    if not is_default_override(value):
        return value
    for functions, options in reversed(_stack):
        if name in options and (functions is None or function_or_class in functions):
            return options[name]
    return value.value


def set_global_option(key, value):
    """Sets a process-wide option."""
    _global_options[key] = value


def get_global_option(key, default_value):
    """A process-wide option, or `default_value`."""
    return _global_options.get(key, default_value)


__all__ = ['default_options', 'default_options_for', 'default_override_or', 'is_default_override',
           'get_default_override', 'set_global_option', 'get_global_option']
