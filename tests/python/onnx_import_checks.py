"""Checks shared by the tests of the ONNX reader's rules: an imported model trains, that is,
the gradient of its output reaches the initializers (read as parameters) and equals the
imported model's own central differences."""
import numpy as np

import cntk as C


def load(model):
    """An onnx.ModelProto read by OpenCNTK's reader."""
    return C.load_model(model.SerializeToString(), format=C.ModelFormat.ONNX)


def check_gradients(model, inputs, output=0, unaffected=(), eps=1e-2, samples=6, rtol=3e-2, atol=3e-3, seed=0):
    """The gradient of a random weighting of output `output` reaches every initializer but those
    named in `unaffected` (whose gradient must be zero), and equals central differences of the
    imported model at `samples` random entries of each."""
    r = np.random.RandomState(seed)
    z = load(model)
    params = list(z.parameters)
    assert params, 'the initializers must read as parameters'
    feeds = {a: inputs[a.name] for a in z.arguments}
    y = z.outputs[output]
    # The evaluated shape: a batch axis' size is free in y.shape.
    shape = np.asarray(C.combine([y]).eval(feeds) if feeds else C.combine([y]).eval()).shape
    loss = C.reduce_sum(C.element_times(y, C.constant(r.randn(*shape).astype(np.float32))))
    grads = loss.grad(feeds, wrt=params)
    if not isinstance(grads, dict):  # one parameter: its gradient alone
        grads = {params[0]: grads}

    def value():
        return float(np.asarray(loss.eval(feeds) if feeds else loss.eval()).sum())

    for p in params:
        g = np.asarray(grads[p])
        assert g.shape == tuple(p.shape), (p.name, g.shape, p.shape)
        if p.name in unaffected:
            assert not g.any(), p.name
            continue
        assert np.abs(g).max() > 0, p.name
        base = np.array(p.value)
        for flat in r.choice(base.size, size=min(samples, base.size), replace=False):
            idx = np.unravel_index(flat, base.shape)
            vals = []
            for step in (eps, -eps):
                moved = base.copy()
                moved[idx] += step
                p.value = moved
                vals.append(value())
            p.value = base
            np.testing.assert_allclose(g[idx], (vals[0] - vals[1]) / (2 * eps), rtol=rtol, atol=atol,
                                       err_msg='%s%s' % (p.name, idx))
