"""Helpers for debugging and profiling graphs: the performance profiler, per-node timing,
signature and graph dumps."""
from .debug import *  # noqa: F401,F403
from .profiler import *  # noqa: F401,F403
from . import debug, profiler  # noqa: F401


def force_deterministic(seed):
    """Makes computation reproducible: deterministic algorithms and a fixed random seed."""
    from ..internal.switches import force_deterministic_algorithms, set_fixed_random_seed
    force_deterministic_algorithms()
    set_fixed_random_seed(seed)


def _arg_spec(v):
    return (v.name + ': ' if v.name else '') + str(v._type)


def dump_signature(root, tag=None):
    """Prints the signature of a Function: `name(arg: type, ...) -> output type`."""
    name = root.name or tag or 'Function'
    outputs = root.outputs
    if len(outputs) > 1:
        result = 'Tuple[' + ', '.join(_arg_spec(o) for o in outputs) + ']'
    else:
        result = _arg_spec(outputs[0])
    print(name + '(' + ', '.join(_arg_spec(a) for a in root.signature) + ') -> ' + result)


def dump_function(root, tag=None):
    """Prints the signature of a Function, then one line per node of its graph (functions,
    parameters, constants, inputs) with its inputs and output shapes. Unnamed nodes get
    letters a, b, ..., z, ba, ...."""
    from ..logging.graph import depth_first_search
    from .. import _cntk
    nodes = depth_first_search(root.root_function, lambda n: not isinstance(n, _cntk.Variable) or not n.is_output,
                               depth=-1)
    letters = {}

    def letter(n):
        return chr(ord('a') + n) if n < 26 else letter(n // 26) + letter(n % 26)

    def label(item):
        if item.name:
            return item.name
        if item.uid not in letters:
            letters[item.uid] = letter(len(letters))
        return letters[item.uid]

    def type_spec(v):
        axes = ''
        if v.dynamic_axes:
            axes = '[' + ','.join('b*' if a.is_batch_axis else a.name + '*' for a in v.dynamic_axes) + ']'
        return axes + str(v.shape)

    dump_signature(root, tag)
    for item in nodes:
        if isinstance(item, _cntk.Variable):
            kind = ('Parameter' if item.is_parameter else 'Constant' if item.is_constant else
                    'Placeholder' if item.is_placeholder else 'Input' if item.is_input else 'Variable')
            print('  {:20} {:30} {}'.format(kind, label(item) + ' ' + item.uid, type_spec(item)))
        else:
            ins = '(' + ', '.join(label(i) + ':' + type_spec(i) for i in item.root_function.inputs) + ')'
            outs = '(' + ', '.join(label(o) + ':' + type_spec(o) for o in item.root_function.outputs) + ')'
            print('  {:20} {:30} {} -> {}'.format(item.op_name, label(item), ins, outs))


__all__ = ['force_deterministic', 'dump_signature', 'dump_function', 'start_profiler', 'stop_profiler',
           'enable_profiler', 'disable_profiler', 'profiler_scope', 'save_as_legacy_model', 'set_checked_mode',
           'set_computation_network_trace_level', 'set_node_timing', 'debug_model']
