import os

import numpy as np
import pytest

SHARED = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared')


@pytest.fixture
def shared_data():
    """Path of ../shared/data; skips the test when it is absent."""
    path = os.path.abspath(os.path.join(SHARED, 'data'))
    if not os.path.isdir(path):
        pytest.skip("shared data folder %s is absent" % path)
    return path


@pytest.fixture(autouse=True)
def _seed():
    """Each test starts from the same seeds, unfixed (a test may fix CNTK's seed: while
    fixed, every automatic seed is that seed)."""
    import cntk as C
    np.random.seed(1)
    C.cntk_py.reset_random_seed(0)


@pytest.fixture(autouse=True)
def _rnn_fusion_restored():
    """A test that turns the fused recurrences off does not change the tests after it."""
    import cntk as C
    was = C.cntk_py.rnn_fusion_enabled()
    yield
    C.cntk_py.set_rnn_fusion(was)


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'onednn(reason): checks what only the oneDNN backend does (its reorder and primitive '
        'counters, fused or kept-layout steps); skipped when the reference backend is selected')


def pytest_collection_modifyitems(config, items):
    """Under the reference backend (CNTK_BACKEND=reference) the tests marked `onednn` skip,
    with their stated reason: there is no primitive, kept layout or fused step to observe."""
    import cntk as C
    if C.cntk_py.get_backend() != 'reference':
        return
    for item in items:
        mark = item.get_closest_marker('onednn')
        if mark:
            why = mark.args[0] if mark.args else 'checks oneDNN-specific behaviour'
            item.add_marker(pytest.mark.skip(reason='reference backend: ' + why))


@pytest.fixture(autouse=True)
def _backend_restored():
    """A test that switches the backend does not change the tests after it."""
    import cntk as C
    was = C.cntk_py.get_backend()
    yield
    C.cntk_py.set_backend(was)
