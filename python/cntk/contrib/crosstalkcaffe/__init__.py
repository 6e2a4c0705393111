"""Conversion of Caffe models (``.prototxt`` + ``.caffemodel``) into CNTK models.

Entry point: :meth:`CaffeConverter.from_model` with a JSON configuration file
(see :mod:`.utils.globalconf`). Caffe itself is not needed: the network
description and weights are read with the ``protobuf`` package. If ``caffe``
is importable, it is used to read weights and to validate the converted model.
"""

from .convert import CaffeConverter  # noqa: F401
