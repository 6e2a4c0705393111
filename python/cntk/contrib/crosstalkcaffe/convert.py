"""The Caffe-to-CNTK conversion driver."""

import sys

from . import adapter
from .unimodel import cntkinstance
from .utils import globalconf
from .validation import validcore


class CaffeConverter(object):
    """Converts Caffe models into CNTK models."""

    @staticmethod
    def from_model(conf_path):
        """Convert the model that configuration file ``conf_path`` describes
        (see :mod:`.utils.globalconf`), save it where the configuration says,
        and save validation data when the configuration asks for it (compared
        against Caffe when the Caffe runtime is available)."""
        conf = globalconf.load_conf(conf_path)
        source = conf.source_solver.source
        if source not in adapter.ADAPTER_DICT:
            raise ValueError('Unsupported source toolkit {0!r}; supported: {1}'
                             .format(source, sorted(adapter.ADAPTER_DICT)))
        description = adapter.ADAPTER_DICT[source].load_model(conf)
        instance = cntkinstance.CntkApiInstance(description, global_conf=conf)
        instance.export_model()

        validator = validcore.Validator(global_conf=conf, functions=instance.get_functions())
        if validator.val_network():
            sys.stdout.write('Validating model: {0}\n'.format(conf.source_solver.model_path))
            validator.activate()
        else:
            sys.stdout.write('No validation requested\n')
