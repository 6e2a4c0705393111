"""``python -m cntk.keras script.py``: runs a Keras 2.3.1 script on OpenCNTK.

See :mod:`cntk.keras_compat` for what the hook supplies and why.
"""
