"""The engine's switches (include/cntk/switches.h): the environment gives their start
value once, when the engine first reads them; afterwards only the setters change them."""
import os
import subprocess
import sys

import cntk as C

_PROBE = """
import os, cntk as C
py = C.cntk_py
print(py.rnn_fusion_enabled(), py.conv_fusion_enabled(), py.dnnl_layouts_enabled(), py.lstm_steps_enabled())
os.environ.update(CNTK_RNN_FUSION='1', CNTK_NO_FUSION='0', CNTK_DNNL_BLOCKED='1', CNTK_LSTM_STEPS='1')
print(py.rnn_fusion_enabled(), py.conv_fusion_enabled(), py.dnnl_layouts_enabled(), py.lstm_steps_enabled())
py.set_rnn_fusion(True); py.set_conv_fusion(True); py.set_dnnl_layouts(True); py.set_lstm_steps(True)
print(py.rnn_fusion_enabled(), py.conv_fusion_enabled(), py.dnnl_layouts_enabled(), py.lstm_steps_enabled())
"""


def _probe(**env):
    full = dict(os.environ, **env)
    for k in ('CNTK_RNN_FUSION', 'CNTK_NO_FUSION', 'CNTK_DNNL_BLOCKED', 'CNTK_LSTM_STEPS'):
        if k not in env:
            full.pop(k, None)
    out = subprocess.run([sys.executable, '-c', _PROBE], env=full, capture_output=True, text=True, check=True)
    return out.stdout.split('\n')[:3]


def test_environment_gives_the_start_values_once():
    off = _probe(CNTK_RNN_FUSION='0', CNTK_NO_FUSION='1', CNTK_DNNL_BLOCKED='0', CNTK_LSTM_STEPS='0')
    assert off[0] == 'False False False False'
    assert off[1] == 'False False False False'  # a later change of the environment is not seen
    assert off[2] == 'True True True True'      # the setters are
    assert _probe()[0] == 'True True True True'


def test_setters_round_trip():
    py = C.cntk_py
    for get, set_ in ((py.rnn_fusion_enabled, py.set_rnn_fusion), (py.conv_fusion_enabled, py.set_conv_fusion),
                      (py.dnnl_layouts_enabled, py.set_dnnl_layouts), (py.lstm_steps_enabled, py.set_lstm_steps)):
        before = get()
        try:
            set_(not before)
            assert get() == (not before)
        finally:
            set_(before)
        assert get() == before


_BACKEND_PROBE = """
import os, cntk as C
py = C.cntk_py
print(py.get_backend())
os.environ['CNTK_BACKEND'] = 'onednn'
print(py.get_backend())
"""


def test_backend_from_environment_once_then_setter():
    env = dict(os.environ, CNTK_BACKEND='reference')
    out = subprocess.run([sys.executable, '-c', _BACKEND_PROBE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split('\n')[:2] == ['reference', 'reference']
    env.pop('CNTK_BACKEND')
    out = subprocess.run([sys.executable, '-c', _BACKEND_PROBE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split('\n')[0] == 'onednn'


def test_backend_setter_round_trip_and_rejects_unknown_names():
    import numpy as np
    import pytest
    py = C.cntk_py
    before = py.get_backend()
    x = C.input_variable(3)
    f = C.tanh(C.times(x, C.constant(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)))
    data = np.arange(6, dtype=np.float32).reshape(2, 3) / 5
    try:
        outs = {}
        for name in ('reference', 'onednn'):
            py.set_backend(name)
            assert py.get_backend() == name
            outs[name] = f.eval({x: data})
        np.testing.assert_allclose(outs['reference'], outs['onednn'], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(outs['reference'], np.tanh(data @ (np.arange(12).reshape(3, 4) / 10)), rtol=1e-5)
        with pytest.raises(ValueError):
            py.set_backend('cuda')
        assert py.get_backend() == 'onednn'
    finally:
        py.set_backend(before)
