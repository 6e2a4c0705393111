"""Comparison with Caffe's own results (needs pycaffe)."""

import os
import sys
from abc import ABC, abstractmethod

import numpy as np

from cntk.contrib.crosstalkcaffe.adapter.bvlccaffe.caffeimpl import CaffeResolver


class ValidCore(ABC):
    """A source toolkit's validation."""

    @staticmethod
    @abstractmethod
    def execute(source_solver, valid_dir):
        """Run the source model on the saved inputs and report the differences
        with the saved CNTK results."""


class CaffeValidCore(ValidCore):
    """Runs the original Caffe model and prints the error of every saved node."""

    @staticmethod
    def execute(source_solver, valid_dir):
        resolver = CaffeResolver()
        if not resolver.runtime():
            sys.stdout.write('No Caffe runtime, skipping the comparison with Caffe\n')
            return
        caffe = resolver.caffe
        net = caffe.Net(source_solver.model_path, source_solver.weights_path, caffe.TEST)
        for name in net.inputs:
            blob = net.blobs[name]
            saved = np.load(os.path.join(valid_dir, name + '.npy'))
            np.copyto(blob.data, saved.reshape(blob.data.shape))
        net.forward()
        for file_name in sorted(os.listdir(valid_dir)):
            node, _ = os.path.splitext(file_name)
            if node in net.inputs or node not in net.blobs:
                continue
            cntk_result = np.load(os.path.join(valid_dir, file_name)).reshape(-1)
            caffe_result = net.blobs[node].data.reshape(-1)
            error = np.abs(cntk_result - caffe_result)
            sys.stdout.write('{0}: RMSE {1:g}, max error {2:g}, min error {3:g}; Caffe values: '
                             'mean {4:g}, max {5:g}, min {6:g}\n'.format(
                                 node, float(np.sqrt(np.mean(error ** 2))), float(error.max()),
                                 float(error.min()), float(caffe_result.mean()),
                                 float(caffe_result.max()), float(caffe_result.min())))
