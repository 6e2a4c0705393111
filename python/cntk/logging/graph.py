"""Walking and drawing graphs: depth_first_search, find_by_name, get_node_outputs, plot."""
import os
import shutil
import subprocess
import sys

from .. import _cntk


def _as_function(node):
    if isinstance(node, _cntk.Variable):
        return node.owner
    return node


def depth_first_search(root, visitor, depth=0):
    """All nodes (functions and leaf variables) reachable from `root` for which `visitor(node)`
    is true, each once, in CNTK's order: a node, then its inputs depth first.
    depth: how many levels of blocks to enter (0: none, -1: all). An entered block is
    followed by what its arguments are bound to and then by its inner graph, whose
    placeholders for those arguments are left out."""
    if depth < 0:
        depth = sys.maxsize
    start = root.root_function if isinstance(root, _cntk.Function) else root
    pending = [(start, depth)]
    found, seen = [], set()
    while pending:
        node, level = pending.pop(0)
        if node.uid in seen:
            continue
        seen.add(node.uid)
        if isinstance(node, _cntk.Function):
            if node.is_block and level > 0:
                mapping = node.block_arguments_mapping
                seen.update(inner.uid for inner, _ in mapping)
                pending.extend((outer, level - 1) for _, outer in mapping)
                pending.append((node.block_root.root_function, level - 1))
            else:
                pending[:0] = [(i, level) for i in node.root_function.inputs]
        elif node.is_output:
            pending.insert(0, (node.owner.root_function, level))
            continue
        if visitor(node):
            found.append(node)
    return found


def find_all_with_name(node, node_name, depth=0):
    """All nodes (functions and variables) named `node_name`."""
    return depth_first_search(node, lambda n: n.name == node_name, depth)


def find_by_name(node, node_name, depth=0):
    """The function named `node_name`, or None; ValueError if several have the name."""
    found = find_all_with_name(node, node_name, depth)
    if len(found) > 1:
        raise ValueError("several nodes are named '%s'" % node_name)
    return found[0] if found else None


def find_by_uid(node, node_uid, depth=0):
    """The node with this uid, or None."""
    found = depth_first_search(node, lambda n: n.uid == node_uid, depth)
    if len(found) > 1:
        raise ValueError("several nodes have uid '%s'" % node_uid)
    return found[0] if found else None


def get_node_outputs(node, depth=0):
    """The output variables of every function in the graph."""
    outs = []
    for f in depth_first_search(node, lambda n: isinstance(n, _cntk.Function), depth):
        outs.extend(f.outputs)
    return outs


def _dot(root):
    nodes = depth_first_search(root, lambda n: True)
    ids = {}

    def nid(n):
        return ids.setdefault(n.uid, 'n%d' % len(ids))

    decls, edges = [], []
    for n in nodes:
        if isinstance(n, _cntk.Function):
            label = '%s%s' % (n.op_name, ' (%s)' % n.name if n.name else '')
            decls.append('  %s [label="%s", shape=ellipse];' % (nid(n), label.replace('"', "'")))
            for i in n.inputs:
                src = i.owner.root_function if i.is_output else i
                edges.append('  %s -> %s [label="%s"];' % (nid(src), nid(n), str(i.shape)))
        else:
            kind = 'Parameter' if n.is_parameter else 'Constant' if n.is_constant else \
                'Placeholder' if n.is_placeholder else 'Input'
            label = '%s %s %s' % (kind, n.name, n.shape)
            decls.append('  %s [label="%s", shape=box];' % (nid(n), label.replace('"', "'")))
    # nodes from the leaves up (a node after the nodes it reads, as the data flows), then the edges
    lines = ['digraph CNTKGraph {', '  rankdir=BT;'] + decls[::-1] + edges + ['}']
    return '\n'.join(lines) + '\n'


def plot(root, filename=None):
    """The graph in DOT; written to `filename` as DOT (.dot) or rendered by graphviz (.png, .pdf, .svg).
    Rendering needs graphviz's `dot` program: without it, a clear error is raised."""
    dot = _dot(root)
    if filename is None:
        return dot
    ext = os.path.splitext(filename)[1].lower().lstrip('.')
    if ext in ('dot', 'gv', ''):
        with open(filename, 'w') as f:
            f.write(dot)
        return dot
    exe = shutil.which('dot')
    if exe is None:
        raise RuntimeError("plot: rendering %s needs graphviz's 'dot' program (apt-get install graphviz); "
                           "use a .dot filename to write the graph description instead" % filename)
    subprocess.run([exe, '-T' + ext, '-o', filename], input=dot.encode(), check=True)
    return dot


__all__ = ['depth_first_search', 'find_all_with_name', 'find_by_name', 'find_by_uid', 'get_node_outputs', 'plot']
