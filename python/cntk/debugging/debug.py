"""Debugging switches (per-node timing, trace level, checked mode) and the interactive
graph debugger `debug_model`, and saving in CNTK's v1 model format."""
import sys

from .. import _cntk
from ..ops import output_variable
from ..ops.functions import UserFunction


def save_as_legacy_model(root_op, filename):
    """Saves `root_op` (a composite Function) in CNTK's v1 model format (what BrainScript's
    `cntk` command reads and writes); `cntk.load_model` reads such files back. Every input and
    parameter shape must be known; ops without a v1 node type raise NotImplementedError."""
    import os
    _cntk.save_as_legacy_model(root_op, os.fspath(filename))


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


_DEBUG_HELP = """\
    Commands of the graph debugger:
        n           run to the next node
        n<count>    run past the next <count> nodes (e.g. n3)
        u f         run until the forward pass
        u b         run until the backward pass
        u <name>    run until a node of that name
        u lambda arg, node: <condition>
                    run until the condition holds, e.g.
                        lambda arg, node: node.op_name == 'Times'
                        lambda arg, node: np.var(arg) > 1
        c           continue to the end
        p           print the node's input (forward) or root gradients (backward)
        d           open a pdb shell
        q           quit\
"""


class _DebugState(object):
    """What the debug nodes of one model share: the pending commands, the pass last
    stopped in ('f', 'b' or None) and the node names of the model."""

    def __init__(self, nodes):
        self.commands = []
        self.last_pass = None
        self.names = set(n.name for n in nodes if n.name)


def _parse_command(text, state):
    """The command list for one line of user input (the last entry runs first), or None."""
    if not text:
        return None
    if text in ('c', 'p', 'd', 'b', 'f'):
        return [text]
    if text[0] == 'n':
        count = text[1:].strip()
        if not count:
            return ['n']
        return ['n'] * int(count) if count.isdigit() and int(count) > 0 else None
    if text[0] == 'u':
        what = text[1:].strip()
        if what.startswith('lambda'):
            import numpy as np  # noqa: F401  (conditions may use np)
            try:
                return [eval(what)]
            except SyntaxError:
                return None
        if what in state.names:
            return [lambda arg, node, _name=what: node.name == _name]
        if what and 'forward'.startswith(what):
            return ['uf']
        if what and 'backward'.startswith(what):
            return ['ub']
    return None


class _DebugNode(UserFunction):
    """An identity user function placed after a node of a model by `debug_model`. Each
    time a forward or backward pass reaches it, it shows the node it follows and reads
    commands (see `_DEBUG_HELP`) from `in_stream` before letting the data through."""

    PROMPT_FORWARD = '[CNTK forward] >>> '
    PROMPT_BACKWARD = '[CNTK backward] >>> '

    def __init__(self, arg, debug_state, in_stream=sys.stdin, out_stream=sys.stdout, exit_func=sys.exit,
                 name='D'):
        if isinstance(arg, _cntk.Variable) and arg.is_output:
            arg = arg.owner  # shown as the function that computes it
        if isinstance(arg, _cntk.Function):
            arg = arg.root_function
        parts = arg.uid.split('_')
        if len(parts) > 2 and parts[-2] == 'Output':
            del parts[-2]
        super(_DebugNode, self).__init__([arg], as_numpy=True, name=name + '_' + '_'.join(parts))
        self.after = arg
        self.debug_state = debug_state
        self._in, self._out, self._exit = in_stream, out_stream, exit_func

    def clone(self, cloned_inputs):
        return _DebugNode(cloned_inputs[0], self.debug_state, self._in, self._out, self._exit)

    def infer_outputs(self):
        arg = self.inputs[0]
        return [output_variable(arg.shape, arg.dtype, arg.dynamic_axes)]

    def _write(self, text):
        self._out.write(text)
        self._out.flush()

    def _read_commands(self, prompt):
        while True:
            self._write(prompt)
            text = self._in.readline().strip()
            if text == 'q':
                self._exit(0)
                continue
            try:
                commands = _parse_command(text, self.debug_state)
            except Exception:
                commands = None
            if commands:
                return commands
            if text:
                self._write(_DEBUG_HELP + '\n')

    def _show(self, current_pass):
        if current_pass != self.debug_state.last_pass:
            title = ' forward  ' if current_pass == 'f' else ' backward '
            self._write(('\n' if current_pass == 'f' else '') + '=' * 35 + title + '=' * 35 + '\n')
        self._write("\n%s with uid '%s'\n" % (str(self.after), self.after.uid))

    def _stop(self, current_pass, data, state=None):
        """Shows the node and follows the commands until one lets the pass go on."""
        self._show(current_pass)
        dbg = self.debug_state
        other = 'ub' if current_pass == 'f' else 'uf'
        mine = 'uf' if current_pass == 'f' else 'ub'
        prompt = self.PROMPT_FORWARD if current_pass == 'f' else self.PROMPT_BACKWARD
        while True:
            if not dbg.commands:
                dbg.commands = self._read_commands(prompt)
            command = dbg.commands[-1]
            if command == 'c' or command == other:
                break  # keep the command: it holds until the end / the other pass
            if command == 'n':
                dbg.commands.pop()
                break
            if command == mine:
                dbg.commands.pop()
                if dbg.last_pass is not None and dbg.last_pass != current_pass:
                    continue  # arrived in the pass waited for: stop here
                break
            if command == 'p':
                dbg.commands.pop()
                if current_pass == 'f':
                    self._write('Input with shape %s:\n%s\n' % (getattr(data, 'shape', None), data))
                else:
                    if state is not None:
                        self._write('State: %s\n' % (state,))
                    self._write('Root gradients with shape %s:\n%s\n' % (getattr(data, 'shape', None), data))
                continue
            if command == 'd':
                dbg.commands.pop()
                import pdb
                pdb.set_trace()
                break
            if callable(command):
                if command(data, self.after):
                    dbg.commands.pop()  # the condition holds: stop here
                    continue
                break
            dbg.commands.pop()  # 'b'/'f' alone mean nothing here
        dbg.last_pass = current_pass

    def forward(self, argument, device=None, outputs_to_retain=None):
        self._stop('f', argument)
        return None, argument

    def backward(self, state, root_gradients):
        self._stop('b', root_gradients, state)
        return root_gradients

    def __str__(self):
        return "_DebugNode(after=%s)" % str(self.after)


def _is_debug_node(node):
    from ..ops.functions import _user_object
    return isinstance(node, _cntk.Function) and isinstance(_user_object(node), _DebugNode)


def _nodes_to_debug(model):
    """The nodes of `model` (functions and leaves) that no debug node follows yet."""
    from ..logging.graph import depth_first_search
    nodes = depth_first_search(model, lambda n: True, depth=-1)
    covered = set()
    for n in nodes:
        if _is_debug_node(n):
            covered.add(n.uid)
            arg = n.root_function.inputs[0]
            covered.add(arg.owner.uid if arg.is_output else arg.uid)
    return [n for n in nodes if n.uid not in covered and
            not (isinstance(n, _cntk.Function) and n.op_name in ('NoOp', 'Combine'))]


def debug_model(model, in_stream=sys.stdin, out_stream=sys.stdout, exit_func=sys.exit):
    """A clone of `model` (parameters shared) with a debug node after every node. When the
    clone is evaluated or trained, each of them stops in the forward and the backward pass,
    shows its node and reads commands from `in_stream` (its `readline()`), writing to
    `out_stream` (`write()`, `flush()`); the command `q` calls `exit_func(0)`.
    The commands are listed below.
    """
    from ..ops.functions import CloneMethod
    nodes = _nodes_to_debug(model)
    state = _DebugState(nodes)
    # A clone substitutes the given nodes' uses with debug nodes whose inputs are the
    # original nodes, which are not yet followed by debug nodes themselves: repeat until
    # every node is covered (each round covers at least one more level).
    for _ in range(len(nodes) + 1):
        if not nodes:
            return model
        subs = {n: _DebugNode(n, state, in_stream, out_stream, exit_func) for n in nodes}
        model = model.clone(CloneMethod.share, subs)
        nodes = _nodes_to_debug(model)
    raise ValueError('debug_model: cannot place debug nodes in this graph')


debug_model.__doc__ += '\n' + _DEBUG_HELP + '\n'


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
