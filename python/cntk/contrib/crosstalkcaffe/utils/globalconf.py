"""The converter's JSON configuration.

Keys are CamelCase in the file and snake_case here::

    {
      "SourceSolver": {"Source": "Caffe", "ModelPath": "net.prototxt",
                       "WeightsPath": "net.caffemodel", "PHASE": 1},
      "ModelSolver": {"CNTKModelPath": "net.cntkmodel"},
      "ValidSolver": {"SavePath": "valid_dir",
                      "ValInputs": {"data": [[0, 255], []]},
                      "ValNodes": {"prob": "prob"}}
    }

``PHASE`` is Caffe's phase whose layers are converted (0 TRAIN, 1 TEST).
``ModelSolver.CNTKTensor`` may map input names to shapes, overriding the
network's own input layers. ``ValidSolver`` is optional: with it, random (or
given) inputs and the CNTK outputs of ``ValNodes`` are saved for comparison
with Caffe.
"""

from . import format


class SourceSolverConf(object):
    """Where the Caffe model is and which phase to convert."""

    def __init__(self):
        self.source = None
        self.model_path = None
        self.weights_path = None
        self.tensor = None
        self.phase = None


class ScriptSolverConf(object):
    """Reserved for script conversion settings."""


class ModelSolverConf(object):
    """Where to write the CNTK model, and optional input shapes."""

    def __init__(self):
        self.cntk_model_path = None
        self.cntk_tensor = None


class ValidConf(object):
    """Validation settings."""

    def __init__(self):
        self.save_path = None
        self.val_inputs = []
        self.val_nodes = []


class GlobalConf(object):
    """The whole configuration."""

    def __init__(self):
        self.source_solver = SourceSolverConf()
        self.script_solver = ScriptSolverConf()
        self.model_solver = ModelSolverConf()
        self.valid_solver = ValidConf()


_SECTION_TYPES = (GlobalConf, SourceSolverConf, ScriptSolverConf, ModelSolverConf, ValidConf)


def _fill(conf_type, entries):
    """An instance of ``conf_type`` with the known keys of ``entries``."""
    conf = conf_type()
    for key, value in entries.items():
        attribute = format.camel_to_snake(key)
        if not hasattr(conf, attribute):
            continue  # unknown keys are ignored
        current = getattr(conf, attribute)
        if isinstance(current, _SECTION_TYPES):
            value = _fill(type(current), value)
        setattr(conf, attribute, value)
    return conf


def load_conf(conf_path):
    """Read the configuration file ``conf_path`` into a :class:`GlobalConf`."""
    return _fill(GlobalConf, format.json_parser(conf_path))
