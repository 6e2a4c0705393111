"""Saving CNTK results of a converted model for comparison with the source."""

import os

import numpy as np

from . import validcaffe

VALID_CORES = {
    'Caffe': validcaffe.CaffeValidCore(),
}


def _file_for(directory, node_name):
    # Node names may contain path separators; they become dots.
    return os.path.join(directory, node_name.replace('\\', '.').replace('/', '.') + '.npy')


class Validator(object):
    """Runs the converted network on validation inputs and saves the inputs and
    the watched nodes' outputs as ``<name>.npy`` in ``valid_solver.save_path``.

    ``valid_solver.val_inputs`` maps input names to ``[[low, high], ...]``
    (uniform random values in that range) or to ``[values]``;
    ``valid_solver.val_nodes`` maps CNTK node names to the source node names
    their results are saved under.
    """

    def __init__(self, global_conf, functions):
        self._source_solver = global_conf.source_solver
        self._valid_solver = global_conf.valid_solver
        self._functions = functions

    def val_network(self):
        """Save the validation data; False when no validation is configured."""
        solver = self._valid_solver
        if solver.save_path is None:
            return False
        os.makedirs(solver.save_path, exist_ok=True)
        feeds = {}
        for name, spec in dict(solver.val_inputs).items():
            variable = self._functions[name]
            source = spec[0]
            if len(source) == 2:
                low, high = source
                value = low + (high - low) * np.random.random_sample((1,) + variable.shape)
            else:
                value = np.array(source).reshape((1,) + variable.shape)
            feeds[name] = value.astype(np.float32)
            np.save(_file_for(solver.save_path, name), feeds[name])
        for node_name, source_name in dict(solver.val_nodes).items():
            node = self._functions[node_name]
            arguments = {argument: feeds[argument.name] for argument in node.arguments}
            np.save(_file_for(solver.save_path, source_name), node.eval(arguments))
        return True

    def activate(self):
        """Compare the saved results with the source toolkit's."""
        VALID_CORES[self._source_solver.source].execute(
            self._source_solver, self._valid_solver.save_path)
