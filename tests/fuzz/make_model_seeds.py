"""Writes one saved model per op family of tests/python/test_model_files.py into a folder: the
seed corpus of the model-loader fuzz target (`make fuzz-model`). Needs the built extension."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'python'))

import cntk as C  # noqa: E402
from cntk import _cntk  # noqa: E402
import test_model_files as cases  # noqa: E402


def main(folder):
    os.makedirs(folder, exist_ok=True)
    for name, build in sorted(cases.ROUND_TRIPS.items()):
        f, _ = build()
        f = f if f.is_composite else C.as_composite(f)
        with open(os.path.join(folder, 'seed_' + name), 'wb') as out:
            out.write(_cntk.save_model_to_bytes(f))


if __name__ == '__main__':
    main(sys.argv[1])
