"""Seeds for fuzz_brainscript's NDL (first byte 3) and MEL (first byte 4) readers.

Usage: make_brainscript_seeds.py CORPUS_DIR FILES_DIR

The texts are those of the tests: every string the NDL and MEL tests write (a string constant, or
a '\\n'.join([...]) of constants, with %-placeholders filled in) is a seed for both readers, since
either may hold the other's fragments. NDL files named by seeds (networkDescription, ndlMacros)
are written into FILES_DIR, and the seeds name them there.
"""
import ast
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = [os.path.join(HERE, '..', 'python', name)
         for name in ('test_brainscript_ndl.py', 'test_brainscript_actions.py')]


def fill(text, files):
    return text.replace('%s', os.path.join(files, 'net.ndl')).replace('%d', '2').replace('%r', '1.0')


def constant_text(node, files):
    """The text of a string constant, or of 'constant % args' (placeholders filled), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return fill(node.value, files)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        left, right = constant_text(node.left, files), constant_text(node.right, files)
        if isinstance(node.op, ast.Mod):
            return left
        if left is not None or right is not None:
            return (left or '') + (right or '')
    return None


def texts(path, files):
    tree = ast.parse(open(path).read())
    out = {}
    for node in ast.walk(tree):
        text = None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == 'join'
                and isinstance(node.func.value, ast.Constant) and node.args and
                isinstance(node.args[0], (ast.List, ast.BinOp))):
            items = node.args[0].elts if isinstance(node.args[0], ast.List) else []
            parts = [constant_text(item, files) for item in items]
            text = node.func.value.value.join(p for p in parts if p is not None)
        else:
            text = constant_text(node, files)
        if text and len(text) >= 16 and ('(' in text or '=' in text):
            out[text] = None
    return list(out)


def main(corpus, files):
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(files, exist_ok=True)
    seeds = []
    for path in TESTS:
        if os.path.exists(path):
            seeds += texts(path, files)
    # The NDL files the tests write, by their module-level names.
    ndl = os.path.join(HERE, '..', 'python', 'test_brainscript_ndl.py')
    if os.path.exists(ndl):
        for node in ast.parse(open(ndl).read()).body:
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and
                    isinstance(node.targets[0], ast.Name) and node.targets[0].id in ('MACROS', 'NETWORK')):
                name = 'macros.ndl' if node.targets[0].id == 'MACROS' else 'net.ndl'
                with open(os.path.join(files, name), 'w') as f:
                    f.write(node.value.value)
    seeds.append('ndlMacros = %s\nhiddenDim = 4\ninitScale = 1\nT = [ NDLNetworkBuilder = [ networkDescription = %s ] ]\n'
                 % (os.path.join(files, 'macros.ndl'), os.path.join(files, 'net.ndl')))
    # NDL: the text as it is, beside an empty NDLNetworkBuilder (the text's run= and sections
    # serve), and as the statements of a section run=.
    written = 0
    for k, text in enumerate(seeds):
        variants = [(3, text), (3, 'NDLNetworkBuilder = [ ]\n' + text),
                    (3, 'run = n\nNDLNetworkBuilder = [ ]\nn = [\n' + text + '\n]\n'), (4, text)]
        for v, (mode, seed) in enumerate(variants):
            with open(os.path.join(corpus, 'test_%d_%d_%d.txt' % (mode, k, v)), 'wb') as f:
                f.write(bytes([mode]) + seed.encode())
            written += 1
    print('%d seeds from the NDL and MEL tests' % written)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
