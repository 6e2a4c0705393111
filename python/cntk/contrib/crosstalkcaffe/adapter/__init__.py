"""Readers of source toolkits' models into the toolkit-neutral description.

``ADAPTER_DICT`` maps the configuration's ``SourceSolver.Source`` to an adapter.
"""

from .bvlccaffe import caffeadapter

ADAPTER_DICT = {
    'Caffe': caffeadapter.CaffeAdapter(),
}
