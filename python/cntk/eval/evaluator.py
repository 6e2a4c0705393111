"""Evaluator: the average of an evaluation function over minibatches, with
progress reported to progress writers."""
from .. import _cntk
from ..core import _to_value

__all__ = ['Evaluator']


def _as_function(f, what):
    """A Function for `f` (a Function, or a Variable that becomes a one-output Function)."""
    if isinstance(f, _cntk.Function):
        return f
    if isinstance(f, _cntk.Variable):
        from ..ops import combine
        return combine([f], name=f.name)
    raise TypeError("%s must be a Function or a Variable, not %s" % (what, type(f).__name__))


def _writer_list(progress_writers):
    if progress_writers is None:
        return []
    if isinstance(progress_writers, (list, tuple)):
        return list(progress_writers)
    return [progress_writers]


def _call_writers(writers, method, *args):
    for w in writers:
        f = getattr(w, method, None)
        if f is not None:
            f(*args)


def _unique_arguments(functions):
    args = []
    for f in functions:
        if f is None:
            continue
        for a in f.arguments:
            if a not in args:
                args.append(a)
    return args


def _minibatch_arguments(arguments, all_args):
    """User data for a minibatch -> (list of (variable, Value), sweep_end or None).

    `arguments` is a dict keyed by input variables (or their names, or Functions
    with that output), a (dict, sequence starts) tuple, or, when the functions
    have a single input, its data alone. Values are NumPy data, lists of sequences,
    SciPy sparse data, Values or MinibatchData; sweep_end is None unless
    MinibatchData was given.
    """
    if arguments is None:
        return [], None
    if isinstance(arguments, tuple) and len(arguments) == 2 and isinstance(arguments[0], dict):
        arguments = arguments[0]  # sequence-start flags: every sample begins a new sequence here
    if not isinstance(arguments, dict):
        if len(all_args) != 1:
            raise ValueError("the data must be a dict mapping input variables to data, since the functions have "
                             "%d inputs: %s" % (len(all_args), ", ".join(str(a) for a in all_args)))
        arguments = {all_args[0]: arguments}
    by_name = {}
    for a in all_args:
        by_name.setdefault(a.name, []).append(a)
    pairs = []
    sweep_end = None
    for key, data in arguments.items():
        if isinstance(key, str):
            found = by_name.get(key, [])
            if len(found) != 1:
                raise ValueError("no unique input named '%s' among %s" % (key, ", ".join(str(a) for a in all_args)))
            key = found[0]
        elif isinstance(key, _cntk.Function):
            key = key.output
        elif not isinstance(key, _cntk.Variable):
            raise TypeError("the keys of the data dict must be input variables or their names, not %s"
                            % type(key).__name__)
        if hasattr(data, 'end_of_sweep') and isinstance(getattr(data, 'data', None), _cntk.Value):
            sweep_end = bool(sweep_end) or bool(data.end_of_sweep)  # MinibatchData
        pairs.append((key, _to_value(key, data)))
    return pairs, sweep_end


class Evaluator(_cntk.Evaluator):
    """Evaluates minibatches against an evaluation function (a per-sample metric).

    Args:
        eval_function (:class:`~cntk.ops.functions.Function`): the evaluation function.
        progress_writers (list): progress writers (:mod:`cntk.logging`) that receive
         each tested minibatch (``update_test``) and the summaries (``write_test_summary``).
    """

    def __init__(self, eval_function, progress_writers=None):
        eval_function = _as_function(eval_function, 'eval_function')
        super(Evaluator, self).__init__(eval_function)
        self._eval_function = eval_function
        self._writers = _writer_list(progress_writers)

    def test_minibatch(self, arguments, device=None, distributed=False):
        """The evaluation function's average per sample over the minibatch.

        Args:
            arguments: the minibatch: a dict mapping input variables (or their
             names) to data (NumPy arrays, lists of sequences, Values or
             MinibatchData); a single input may get its data directly.
            device: ignored (computation runs on the CPU).
            distributed (bool): the average over the minibatches of all workers (every
             worker calls it; see :mod:`cntk.train.distributed`).

        Returns:
            float: the average of the evaluation function per sample.
        """
        pairs, _ = _minibatch_arguments(arguments, list(self._eval_function.arguments))
        average, _ = self._test_minibatch(pairs, [], bool(distributed))
        prev = self._previous_test_minibatch()
        if prev.samples > 0:
            _call_writers(self._writers, 'update_test', prev.samples, prev.sum)
        return average

    @property
    def evaluation_function(self):
        """The evaluation function the evaluator uses."""
        return self._eval_function

    def summarize_test_progress(self):
        """Writes the summary of the tests since the last summary to the progress writers."""
        _call_writers(self._writers, 'write_test_summary')

    def print_node_timing(self):
        """Prints the per-node totals (cntk.debugging.set_node_timing) of the evaluation function."""
        from ..debugging.debug import _print_node_timing
        _print_node_timing([self.evaluation_function])
