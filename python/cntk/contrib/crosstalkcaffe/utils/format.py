"""String and file format helpers."""

import json
import re

# A word is an acronym (followed by a capitalized word, a digit or the end),
# an optionally capitalized lowercase run, a digit run, or a leftover
# uppercase run.
_WORD = re.compile(r'[A-Z]+(?=[A-Z][a-z]|\d|$|_)|[A-Z]?[a-z]+|\d+|[A-Z]+')


def camel_to_snake(camel_string):
    """``'BatchNorm'`` -> ``'batch_norm'``, ``'CNTKModelPath'`` ->
    ``'cntk_model_path'``, ``'conv1'`` -> ``'conv_1'``."""
    return '_'.join(word.lower() for word in _WORD.findall(camel_string))


def json_parser(path):
    """The first JSON value in file ``path`` (trailing text is ignored)."""
    with open(path, 'r') as f:
        value, _ = json.JSONDecoder().raw_decode(f.read().lstrip())
    return value
