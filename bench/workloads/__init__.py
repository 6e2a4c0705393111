"""The benchmark suite's workloads, in the order of the report. See common.py for what a workload defines."""
import importlib

ORDER = ['mlp', 'cnn', 'cifar_cnn', 'bilstm', 'fasttext', 'char_lstm', 'atis', 'alexnet', 'googlenet']


def load(name):
    if name not in ORDER:
        raise ValueError('unknown workload %r (known: %s)' % (name, ', '.join(ORDER)))
    return importlib.import_module('.' + name, __name__)
