"""Debugging switches: per-node timing, trace level, checked mode; the interactive
debug_model and legacy model saving are not implemented yet."""
import sys

from .. import _cntk


def save_as_legacy_model(root_op, filename):
    """Saving in CNTK's v1 model format is not implemented."""
    raise NotImplementedError("save_as_legacy_model: writing CNTK v1 (.dnn) model files is not implemented yet")


def set_checked_mode(enable):
    """Checked mode, CNTK's extra run-time verification (off by default): every forward
    step checks that its outputs hold no NaN in their valid frames, every backward step
    that the gradients it passes on hold none. A violation raises a RuntimeError naming
    the op. See src/exec/checked_mode.h."""
    _cntk.set_checked_mode(bool(enable))


def set_computation_network_trace_level(level):
    """Verbosity of engine tracing (0 = off)."""
    from ..internal.switches import set_computation_network_trace_level as set_level
    set_level(level)


def set_node_timing(enable):
    """Switches per-node timing on or off. While it is on, the executor adds up the time of
    every primitive it runs, forward and backward; `Function.print_node_timing()`,
    `Trainer.print_node_timing()` and `Evaluator.print_node_timing()` print the totals.
    Switching it on starts the totals afresh."""
    _cntk.set_node_timing(bool(enable))


def debug_model(model, in_stream=sys.stdin, out_stream=sys.stdout, exit_func=sys.exit):
    """The interactive graph debugger is not implemented."""
    raise NotImplementedError("debug_model: the interactive graph debugger is not implemented yet")


def _primitives(functions):
    """The primitive functions (block contents included) of the given graphs, each once."""
    from ..logging.graph import depth_first_search
    seen, out = set(), []
    for f in functions:
        if f is None:
            continue
        for node in depth_first_search(f, lambda n: not isinstance(n, _cntk.Variable) and not n.is_block, depth=-1):
            if node.uid not in seen and node.op_name != 'Combine':
                seen.add(node.uid)
                out.append(node)
    return out


def _print_node_timing(functions, file=None):
    """Prints the per-node totals collected since set_node_timing(True) for the nodes of
    `functions` (to stderr unless `file` is given)."""
    file = sys.stderr if file is None else file
    if not _cntk.node_timing():
        file.write("Node timing is off: call cntk.debugging.set_node_timing(True) before computing.\n")
        return
    rows = []
    for node in _primitives(functions):
        fc, fms, bc, bms = _cntk.node_time(node.uid)
        if fc or bc:
            rows.append(('%s %s' % (node.op_name, node.name or node.uid), fc, fms, bc, bms))
    file.write("Node timing (%d nodes):\n" % len(rows))
    width = max([len(r[0]) for r in rows] + [4])
    for name, fc, fms, bc, bms in rows:
        file.write("  %-*s  forward: %6d calls %12.3f ms   backward: %6d calls %12.3f ms\n"
                   % (width, name, fc, fms, bc, bms))
    file.flush()


__all__ = ['save_as_legacy_model', 'set_checked_mode', 'set_computation_network_trace_level', 'set_node_timing',
           'debug_model']
