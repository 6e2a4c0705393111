"""Loss helpers used by the agents, expressed as CNTK graphs."""

import cntk.ops as C


def _sum_to_scalar(x):
    # Both helpers return one scalar per sample (shape ()), as CNTK 2.7's
    # reduce_sum over all static axes did; the reshape pins that shape.
    return C.reshape(C.reduce_sum(x), ())


def huber_loss(output, target):
    r"""Huber loss with :math:`\delta = 1`, summed over the output vector.

    Quadratic for residuals smaller than one and linear beyond, so that a single
    badly estimated target cannot produce an exploding gradient (the "error
    clipping" of the DQN paper). The sum makes it a per-sample scalar.
    """
    residual = target - output
    magnitude = C.abs(residual)
    return _sum_to_scalar(C.element_select(
        C.less(magnitude, 1), 0.5 * C.square(residual), magnitude - 0.5))


def negative_of_entropy_with_softmax(p):
    r"""The negative entropy :math:`\sum_i q_i \log q_i` of ``q = softmax(p)``.

    Written as ``sum(softmax(p) * p) - logsumexp(p)``, which equals the above
    because :math:`\log q_i = p_i - \mathrm{logsumexp}(p)` and the
    :math:`q_i` sum to one; this avoids taking the log of a tiny probability.
    """
    return _sum_to_scalar(C.softmax(p) * p) - C.reshape(C.reduce_log_sum_exp(p), ())
