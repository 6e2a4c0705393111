"""Low-rank factorization of ``Dense`` layers.

A ``Dense`` layer ``x @ W + b`` with ``W`` of shape ``(m, n)`` becomes
``(x @ W1) @ W2 + b`` with ``W1`` of shape ``(m, k)`` and ``W2`` ``(k, n)``: for
``k < m*n/(m+n)`` fewer weights and operations, at the price of the best rank-k
approximation of ``W`` (truncated SVD).
"""

import numpy as np

import cntk
from cntk.default_options import default_override_or, get_default_override
from cntk.internal import _as_tuple
from cntk.ops import times
from cntk.ops.functions import BlockFunction
from cntk.variables import Parameter

try:
    from cntk.layers.blocks import identity
except ImportError:  # pragma: no cover
    def identity(x):
        return x


def svd_subprojection(matrix, k):
    """Rank-``k`` factors ``W1 (m, k)``, ``W2 (k, n)`` of ``matrix`` from its SVD
    ``U diag(s) V``: ``W1`` is ``U``'s first k columns, ``W2`` the first k rows of
    ``diag(s) V``, so ``W1 @ W2`` is the best rank-k approximation."""
    U, s, V = np.linalg.svd(np.asarray(matrix), full_matrices=False)
    W1 = np.ascontiguousarray(U[:, :k])
    W2 = np.diag(s[:k]) @ V[:k, :]
    return W1, W2


def _data_input(block):
    operands = [i for i in block.inputs if not (i.is_parameter or i.is_constant)]
    if len(operands) != 1:
        raise ValueError('Dense {0!r}: expected one data input, found {1}'
                         .format(block.name, len(operands)))
    return operands[0]


def factor_dense(model, projection_function=None, filter_function=None,
                 factor_function=None):
    """Replace the ``Dense`` layers of ``model`` by factored ones.

    Args:
        model: the model.
        projection_function: ``W -> k``, the rank to keep for weights ``W``
            (required with the default SVD factorization; otherwise the rank
            defaults to ``min(W.shape)``).
        filter_function: ``block -> bool``, which ``Dense`` blocks to factor
            (all by default).
        factor_function: ``(W, k) -> (W1, W2)``; truncated SVD
            (:func:`svd_subprojection`) by default.

    Returns:
        the model with the affine part of each selected ``Dense`` block
        replaced by a ``DenseFactored`` block (with the bias), followed by the
        layer's activation.
    """
    if factor_function is None and projection_function is None:
        raise ValueError('factor_dense: the default (SVD) factorization needs a '
                         'projection_function giving the rank to keep')
    factor = factor_function or svd_subprojection

    def is_dense(x):
        return (isinstance(x, cntk.Function) and x.is_block and x.op_name == 'Dense'
                and (filter_function(x) if filter_function else True))

    def factored(block):
        params = {p.name: p for p in block.parameters}
        W = params['W'].value
        b = params['b'] if 'b' in params else None
        rows, columns = W.shape
        k = projection_function(W) if projection_function else min(rows, columns)
        W1, W2 = factor(W, k)
        replacement = dense_factored(
            (int(k), int(columns)), init={'W1': W1, 'W2': W2}, activation=None,
            bias=b is not None, init_bias=b.value if b is not None else 0,
            name='DenseFactored')(_data_input(block))

        # Swap the affine part (x @ W [+ b]) inside the block's contents, so
        # that the layer's activation, if any, is kept after it.
        def is_affine(x):
            if not isinstance(x, cntk.Function) or x.is_block:
                return False
            operands = set(x.inputs)
            if b is not None:
                return x.op_name == 'Plus' and b in operands
            return x.op_name == 'Times' and params['W'] in operands

        return cntk.misc.convert(cntk.as_composite(block.block_root), is_affine,
                                 lambda _: replacement)

    return cntk.misc.convert(model, is_dense, factored)


def dense_factored(shapes,
                   activation=default_override_or(identity),
                   init={'W1': None, 'W2': None},
                   input_rank=None,
                   map_rank=None,
                   bias=default_override_or(True),
                   init_bias=default_override_or(0),
                   name=''):
    """A ``Dense``-like layer with factored weights ``W1 @ W2``.

    Args:
        shapes (tuple): ``(k, n)``: the inner rank and the output dimension.
        activation: applied to the output (``None`` for none).
        init (dict): values or initializers of ``'W1'`` (input dimension
            inferred, by ``k``) and ``'W2'`` (``k`` by ``n``).
        input_rank, map_rank: not supported (must be None).
        bias (bool): add a bias ``b`` of shape ``(n,)``.
        init_bias: its value or initializer.
        name (str): block instance name.
    """
    if input_rank is not None or map_rank is not None:
        raise NotImplementedError('dense_factored: input_rank and map_rank are not supported')
    if not all(isinstance(s, (int, np.integer)) for s in shapes):
        raise TypeError('dense_factored: shapes must be two integers, got {0}'.format(shapes))

    activation = get_default_override(cntk.layers.Dense, activation=activation)
    bias = get_default_override(cntk.layers.Dense, bias=bias)
    init_bias = get_default_override(cntk.layers.Dense, init_bias=init_bias)

    inner_shape, output_shape = _as_tuple(int(shapes[0])), _as_tuple(int(shapes[1]))
    W1 = Parameter((cntk.InferredDimension,) + inner_shape, init=init['W1'], name='W1')
    W2 = Parameter(inner_shape + output_shape, init=init['W2'], name='W2')
    b = Parameter(output_shape, init=init_bias, name='b') if bias else None

    @BlockFunction('DenseFactored', name)
    def dense(x):
        r = times(times(x, W1), W2)
        if b is not None:
            r = r + b
        if activation is not None:
            r = activation(r)
        return r
    return dense
