"""convert(root_func, filter, converter): a copy of a graph in which every function that
`filter` selects is replaced by what `converter` builds for it, inside blocks too."""
from .. import ops as _ops
from ..logging.graph import depth_first_search
from ..ops.functions import CloneMethod, Function


def _is_block(node):
    return isinstance(node, Function) and node.root_function.is_block


def _substitute(root_func, old_outputs, new_outputs):
    """root_func with the variables old_outputs replaced by new_outputs. A replaced
    variable that is itself an output of root_func is swapped in directly (a clone only
    substitutes what the graph reads)."""
    subs = dict(zip(old_outputs, new_outputs))
    outs = list(root_func.outputs)
    inner = [o for o in outs if o not in subs]
    if not inner:
        return _ops.combine([subs[o] for o in outs])
    if len(inner) == len(outs):
        return root_func.clone(CloneMethod.share, subs)
    rest = _ops.combine(inner).clone(CloneMethod.share, subs)
    it = iter(rest.outputs)
    return _ops.combine([subs[o] if o in subs else next(it) for o in outs])


def convert(root_func, filter, converter):
    '''
    Clones the graph of `root_func`, replacing every function selected by `filter` with
    the function `converter` returns for it (a function of the same inputs, with the same
    output shape). Blocks whose inside holds selected functions are rebuilt around their
    converted inside.

    Args:
        root_func: the root function of the graph to convert
        filter: a predicate over functions, true for those to replace
        converter: builds the replacement of one selected function

    Returns:
        the converted Function (`root_func` itself when nothing was selected)
    '''
    # Blocks first: convert their insides and rebuild the blocks that changed.
    for block in depth_first_search(root_func, _is_block, depth=0):
        block_root = _ops.as_composite(block.block_root)
        new_root = convert(block_root, filter, converter)
        if new_root is block_root:
            continue
        mapping = dict(block.block_arguments_mapping)
        new_mapping = [(new_arg, mapping[old_arg]) for old_arg, new_arg in zip(block_root.arguments,
                                                                              new_root.arguments)]
        new_block = _ops.as_block(new_root, new_mapping, block.op_name, block.name)
        root_func = _substitute(root_func, block.outputs, new_block.outputs)
    # Then the selected functions outside blocks, one at a time: each substitution makes a
    # new graph, so search again after each.
    done = set()
    while True:
        pending = [f for f in depth_first_search(root_func, filter, depth=0) if f.uid not in done]
        if not pending:
            return root_func
        target = pending[0]
        replacement = converter(target)
        if filter(replacement):
            raise RuntimeError("convert: the converter returned a function the filter selects again")
        done.add(target.uid)
        old, new = list(target.outputs), list(replacement.outputs)
        if len(old) != len(new):
            raise ValueError("convert: the converter returned %d outputs for '%s', which has %d"
                             % (len(new), target.op_name, len(old)))
        root_func = _substitute(root_func, old, new)
