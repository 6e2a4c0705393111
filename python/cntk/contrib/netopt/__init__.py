"""Network optimization: smaller or cheaper versions of trained networks.

* :mod:`.factorization`: low-rank (SVD) factorization of ``Dense`` layers.
* :mod:`.quantization`: binarized (1-bit) convolutions trained with the
  straight-through estimator, built from the operators of
  :mod:`.custom_convolution_ops`.

CNTK 2.7 could further swap trained binary convolutions for a native,
Halide-generated kernel loaded from a plug-in library; whether that kernel is
available is recorded in ``native_convolve_function_registered``.
"""

import sys

import cntk as C

#: Name of the native binary-convolution plug-in library CNTK 2.7 shipped.
NATIVE_BINARY_CONVOLUTION_LIBRARY = 'Cntk.BinaryConvolution-' + C.__version__.rstrip('+')


def try_register_native_convolve_function():
    """Try to register the native binary convolution operator and record the
    outcome in ``native_convolve_function_registered``."""
    registered = False
    register = getattr(C.ops, 'register_native_user_function', None)
    if register is not None:
        try:
            register('NativeBinaryConvolveFunction', NATIVE_BINARY_CONVOLUTION_LIBRARY,
                     'CreateBinaryConvolveFunction')
            registered = True
        except Exception:  # the plug-in library is optional
            registered = False
    setattr(sys.modules[__name__], 'native_convolve_function_registered', registered)
    return registered


native_convolve_function_registered = False
try_register_native_convolve_function()
