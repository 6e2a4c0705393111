"""Layers over sequences (CNTK 2.7's cntk.layers.sequence): Delay, PastValueWindow,
Recurrence, RecurrenceFrom, Fold and UnfoldFrom.

A recurrence is a graph that reads its own output one step back (or ahead,
with go_backwards): step_function(delay(h), x) -> h. The engine finds such loops
and runs them step by step over the sequence, all sequences of the minibatch at
once (see src/exec)."""
import inspect

import numpy as np

from .. import _cntk
from ..default_options import default_override_or, get_default_override
from ..ops import combine, placeholder, splice, element_times, alias
from ..ops import sequence as _seq
from ..ops.functions import Function
from .blocks import identity
from .recurrent_blocks import _state_shapes


def _sanitize_function(f):
    """A Function from a Python function; its arguments with defaults (such as the
    `name` of C.plus) are left out of the signature."""
    if isinstance(f, _cntk.Function) or not callable(f):
        return f
    params = [p for p in inspect.signature(f).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if len(params) == len(inspect.signature(f).parameters):
        return Function(f)
    names = [p.name for p in params]
    src = "def {0}({1}):\n    return _f({1})\n".format(getattr(f, '__name__', 'step'), ", ".join(names))
    scope = {'_f': f}
    exec(src, scope)
    return Function(scope[getattr(f, '__name__', 'step')])


def _sanitize_step_function(f):
    """A recurrence's step function as a Function; a Python step function may use only
    its own arguments (CNTK refuses one that captures other variables or placeholders)."""
    fun = _sanitize_function(f)
    if isinstance(f, _cntk.Function) or not callable(f):
        return fun
    py_args = [p.name for p in inspect.signature(f).parameters.values() if p.default is p.empty]
    if len(fun.arguments) > len(py_args):
        extra = sorted(set(a.name for a in fun.arguments) - set(py_args))
        raise TypeError("Recurrence: the Python step function uses CNTK variables or placeholders besides its "
                        "arguments %s: %s; a step function is step(prev_state_1, ..., prev_state_n, x) and refers "
                        "to no other variables" % (py_args, extra))
    return fun


def _inject_name(f, name):
    if not name:
        return f
    if len(f.outputs) == 1:
        return alias(f, name=name)
    return combine(list(f.outputs), name=name)


def _initial_state_or_default(initial_state):
    return 0 if initial_state is None else initial_state


def Delay(T=1, initial_state=default_override_or(0), name=''):
    """A layer that delays its input sequence by `T` steps (negative: looks into the
    future; 0: no-op), reading `initial_state` where that falls off a sequence."""
    initial_state = _initial_state_or_default(get_default_override(Delay, initial_state=initial_state))
    from .blocks import layer

    def delay(x):
        return _seq.delay(x, initial_state=initial_state, time_step=T)
    return layer('Delay', delay, name)


def PastValueWindow(window_size, axis, go_backwards=default_override_or(False), name=''):
    """The last `window_size` items of a sequence as a static axis `axis`, newest
    first (oldest first with go_backwards), zero-padded, and a validity mask of the
    same length: returns (value, valid)."""
    go_backwards = get_default_override(PastValueWindow, go_backwards=go_backwards)
    from .blocks import layer

    def nth(x, offset):
        if go_backwards:
            return _seq.first(_seq.delay(x, time_step=-offset))
        return _seq.last(_seq.delay(x, time_step=offset))

    def past_value_window(x):
        ones = _seq.broadcast_as(1, x)
        values = [nth(x, t) for t in range(window_size)]
        valids = [nth(ones, t) for t in range(window_size)]
        return (splice(*values, axis=axis, name='value'), splice(*valids, axis=axis, name='valid'))
    return layer('PastValueWindow', past_value_window, name)


def _expand_to(init, shape):
    """The initial state broadcast to the state's shape, so that a loop whose state is
    not known yet starts from the right shape."""
    if shape is None:
        return init
    if isinstance(init, (_cntk.Variable, _cntk.Function)):
        return element_times(init, np.ones(shape, dtype=np.float32))
    arr = np.asarray(init, dtype=np.float32)
    if arr.shape == tuple(shape):
        return init
    return np.broadcast_to(arr, shape).copy()


# Names of the state arguments of the function RecurrenceFrom returns (CNTK's; at most 10 states).
_STATE_ARG_NAMES = ('h', 'c', 'a', 'b', 'd', 'e', 'f', 'g', 'i', 'j')


def RecurrenceFrom(step_function, go_backwards=default_override_or(False), return_full_state=False, name=''):
    """Like Recurrence, with the initial state given as data: the layer takes
    (initial_state_1, ..., initial_state_N, input_sequence). Initial states have no
    sequence axis (one per sequence with a batch axis, or one for all)."""
    go_backwards = get_default_override(RecurrenceFrom, go_backwards=go_backwards)
    step_function = _sanitize_step_function(step_function)
    prev_state_args = step_function.signature[0:-1]
    n = len(prev_state_args)
    if len(step_function.outputs) != n:
        raise TypeError("RecurrenceFrom: the step function has %d state arguments but %d outputs; it must return "
                        "one new value per state variable" % (n, len(step_function.outputs)))
    if n == 0 or n > len(_STATE_ARG_NAMES):
        raise ValueError("RecurrenceFrom supports step functions with 1 to %d state variables, not %d"
                         % (len(_STATE_ARG_NAMES), n))
    shapes = _state_shapes(step_function)

    def _recurrence_from_n(*args):
        initial_state, x = args[:-1], args[-1]
        state_fwd = [placeholder(name=a.name) for a in prev_state_args]
        prev = [_seq.delay(s, initial_state=_expand_to(init, shapes[i] if shapes else None),
                           time_step=-1 if go_backwards else 1)
                for i, (s, init) in enumerate(zip(state_fwd, initial_state))]
        out = step_function(*(prev + [x]))
        out.replace_placeholders(dict(zip(state_fwd, out.outputs)))
        if not return_full_state:
            out = combine([out.outputs[0]])
        return out

    # Function reads the graph's arguments from the signature: one per state, then x.
    def recurrence_from(*args):
        return _recurrence_from_n(*args)
    recurrence_from.__name__ = 'recurrence_from_%d' % n
    recurrence_from.__signature__ = inspect.Signature(
        [inspect.Parameter(a, inspect.Parameter.POSITIONAL_OR_KEYWORD) for a in _STATE_ARG_NAMES[:n] + ('x',)])

    f = Function(recurrence_from)
    return _inject_name(f, name)


def Recurrence(step_function, go_backwards=default_override_or(False), initial_state=default_override_or(0),
               return_full_state=False, name=''):
    """Runs `step_function` (previous state..., x) -> new state over a sequence and
    returns the sequence of states (the first state variable only, unless
    `return_full_state`). `initial_state` (default 0) is a scalar, tensor or
    Parameter, or a tuple of them (one per state variable). With `go_backwards` the
    recurrence runs from the end of each sequence to its start."""
    go_backwards = get_default_override(Recurrence, go_backwards=go_backwards)
    initial_state = _initial_state_or_default(get_default_override(Recurrence, initial_state=initial_state))
    step_function = _sanitize_step_function(step_function)
    n = len(step_function.signature) - 1
    if isinstance(initial_state, tuple) and len(initial_state) == 1:
        initial_state = initial_state[0]
    if not isinstance(initial_state, tuple):
        initial_state = tuple(initial_state for _ in range(n))
    if len(initial_state) != n:
        raise ValueError("Recurrence: %d initial states given for a step function with %d state variables"
                         % (len(initial_state), n))
    recurrence_from = RecurrenceFrom(step_function, go_backwards, return_full_state)
    # Data given as an initial state is a constant of the layers' data type (that of their
    # parameters under default_options(dtype=...)): float32 zeros would meet float16 weights.
    # Its value is the float32 literal's, as CNTK's float32 constant gave it.
    from ..variables import Constant, Parameter
    dtype = get_default_override(Parameter, dtype=default_override_or(np.float32))
    initial_state = tuple(s if isinstance(s, (_cntk.Variable, _cntk.Function))
                          else Constant(np.asarray(s, np.float32).astype(dtype), dtype=dtype)
                          for s in initial_state)

    def recurrence(x):
        return recurrence_from(*(initial_state + (x,)))
    return _inject_name(Function(recurrence), name)


def Fold(folder_function, go_backwards=default_override_or(False), initial_state=default_override_or(0),
         return_full_state=False, name=''):
    """Recurrence that returns only the final state (the first item's with
    go_backwards): a sequence reduced to one value per sequence."""
    go_backwards = get_default_override(Fold, go_backwards=go_backwards)
    initial_state = get_default_override(Fold, initial_state=initial_state)
    recurrence = Recurrence(folder_function, go_backwards=go_backwards, initial_state=initial_state,
                            return_full_state=return_full_state)
    get_final = _seq.first if go_backwards else _seq.last

    def fold(x):
        r = recurrence(x)
        outs = [get_final(o) for o in r.outputs]
        return outs[0] if len(outs) == 1 else combine(outs)
    return _inject_name(Function(fold), name)


def _with_axes_of(x, like):
    """x with the dynamic axes of `like` (repeated along the ones it lacks)."""
    from ..ops import reconcile_dynamic_axes
    return reconcile_dynamic_axes(x, like)


def _valid_until(flags):
    """1 on the steps up to and including the first step whose flag is 1, 0 after it:
    valid[t] = valid[t-1] * (1 - flags[t-1]), valid[0] = 1."""
    from ..ops import minus, element_times
    return Recurrence(lambda h, previous_flag: element_times(minus(1, previous_flag), h), initial_state=1,
                      name='valid_frames')(_seq.past_value(flags))


def UnfoldFrom(generator_function, until_predicate=None, length_increase=1, name='', map_state_function=identity,
               initial_state=None):
    """A recurrent generator: emits f(s), f(f(s)), ... from a seed state s; `f` may
    return (output, new state), and then the output of each step is the first and the
    state fed back the second.

    As in CNTK 2.7, the layer takes two arguments, (initial_state, dynamic_axes_like):
    the seed (one per sequence with a batch axis, or one for all) and a sequence. Given
    the seed here as `initial_state` (an OpenCNTK extension, like `map_state_function`,
    which maps each new state before it is fed back), the layer takes dynamic_axes_like
    alone.

    dynamic_axes_like only gives the length: the output has
    length_increase items per item of it (fractions accumulate, as sequence.where
    counts them; the default 1 gives one each). `until_predicate` (a function of the
    output, 1 on the last item to keep and 0 elsewhere) cuts each sequence after the
    first item where it is 1."""
    import numbers
    if isinstance(length_increase, bool) or not isinstance(length_increase, numbers.Real) or not length_increase > 0:
        raise ValueError("UnfoldFrom: length_increase must be a positive number, got %r" % (length_increase,))
    generator_function = _sanitize_function(generator_function)
    map_state_function = _sanitize_function(map_state_function)
    if until_predicate is not None:
        if not callable(until_predicate):
            raise TypeError("UnfoldFrom: until_predicate must be a Function or a Python function, not %s"
                            % type(until_predicate).__name__)
        until_predicate = _sanitize_function(until_predicate)
    if len(generator_function.signature) != 1 or not 1 <= len(generator_function.outputs) <= 2:
        raise TypeError("UnfoldFrom: generator_function must take 1 argument (the state) and return an output or "
                        "a tuple (output, new state)")

    def unfold(seed, dynamic_axes_like):
        out_axis = dynamic_axes_like
        if length_increase != 1:
            # a new axis with length_increase steps per input step; only its length matters
            out_axis = _seq.where(_seq.broadcast_as(float(length_increase), dynamic_axes_like))
        state_fwd = placeholder(name='unfold_state_fwd')
        prev_state = _seq.delay(state_fwd, initial_state=seed)
        z = generator_function(prev_state)
        output = z.outputs[0]
        new_state = z.outputs[1] if len(z.outputs) > 1 else output
        new_state = map_state_function(new_state)
        new_state = combine([_with_axes_of(new_state, out_axis)])
        new_state.replace_placeholders({state_fwd: new_state.output})
        output = combine([output])
        if until_predicate is not None:
            # (the output has out_axis already; saying so lets shape inference see a
            # sequence while the loop's state type is still a guess)
            output = _with_axes_of(output, out_axis)
            output = _seq.gather(output, _valid_until(until_predicate(output)), name='valid_output')
        return output

    if initial_state is None:
        def unfold_from(initial_state, dynamic_axes_like):
            return unfold(initial_state, dynamic_axes_like)
    else:
        def unfold_from(dynamic_axes_like):
            return unfold(initial_state, dynamic_axes_like)
    return _inject_name(Function(unfold_from), name)


__all__ = ['Delay', 'PastValueWindow', 'RecurrenceFrom', 'Recurrence', 'Fold', 'UnfoldFrom']
