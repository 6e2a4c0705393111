"""The engine's switches (include/cntk/switches.h): the environment gives their start
value once, when the engine first reads them; afterwards only the setters change them."""
import os
import subprocess
import sys

import cntk as C

_PROBE = """
import os, cntk as C
py = C.cntk_py
print(py.rnn_fusion_enabled(), py.conv_fusion_enabled(), py.dnnl_layouts_enabled())
os.environ.update(CNTK_RNN_FUSION='1', CNTK_NO_FUSION='0', CNTK_DNNL_BLOCKED='1')
print(py.rnn_fusion_enabled(), py.conv_fusion_enabled(), py.dnnl_layouts_enabled())
py.set_rnn_fusion(True); py.set_conv_fusion(True); py.set_dnnl_layouts(True)
print(py.rnn_fusion_enabled(), py.conv_fusion_enabled(), py.dnnl_layouts_enabled())
"""


def _probe(**env):
    full = dict(os.environ, **env)
    for k in ('CNTK_RNN_FUSION', 'CNTK_NO_FUSION', 'CNTK_DNNL_BLOCKED'):
        if k not in env:
            full.pop(k, None)
    out = subprocess.run([sys.executable, '-c', _PROBE], env=full, capture_output=True, text=True, check=True)
    return out.stdout.split('\n')[:3]


def test_environment_gives_the_start_values_once():
    off = _probe(CNTK_RNN_FUSION='0', CNTK_NO_FUSION='1', CNTK_DNNL_BLOCKED='0')
    assert off[0] == 'False False False'
    assert off[1] == 'False False False'  # a later change of the environment is not seen
    assert off[2] == 'True True True'     # the setters are
    assert _probe()[0] == 'True True True'


def test_setters_round_trip():
    py = C.cntk_py
    for get, set_ in ((py.rnn_fusion_enabled, py.set_rnn_fusion), (py.conv_fusion_enabled, py.set_conv_fusion),
                      (py.dnnl_layouts_enabled, py.set_dnnl_layouts)):
        before = get()
        try:
            set_(not before)
            assert get() == (not before)
        finally:
            set_(before)
        assert get() == before
