"""The backend boundary (src/kernels/backend.h): the ops, the graph and the executor name
no vendor library; oneDNN and its layouts stay in src/kernels/cpu. The op suite runs on
both CPU backends (scripts/test.sh); this keeps the source side of that promise."""
import os
import re

SRC = os.path.join(os.path.dirname(__file__), '..', '..', 'src')


def test_ops_graph_and_exec_do_not_mention_onednn_names():
    found = []
    for folder in ('ops', 'graph', 'exec'):
        root = os.path.join(SRC, folder)
        for dirpath, _, files in os.walk(root):
            for name in files:
                path = os.path.join(dirpath, name)
                with open(path, encoding='utf-8', errors='replace') as f:
                    for n, line in enumerate(f, 1):
                        if re.search('dnnl', line, re.IGNORECASE):
                            found.append('%s:%d: %s' % (os.path.relpath(path, SRC), n, line.strip()))
    assert not found, 'oneDNN names outside src/kernels:\n' + '\n'.join(found)

