"""Shared by the tests that run Keras 2.3.1: they skip where it is not installed.
Keras cannot be imported to check (on Python 3.10+ it needs cntk.keras_compat first),
so its installed version is read from the package metadata."""
import importlib.metadata

import pytest


def keras_version():
    try:
        return importlib.metadata.version('keras')
    except importlib.metadata.PackageNotFoundError:
        return None


requires_keras_2_3_1 = pytest.mark.skipif(keras_version() != '2.3.1',
                                          reason='Keras 2.3.1 is not installed (scripts/install-deps.sh installs it)')
