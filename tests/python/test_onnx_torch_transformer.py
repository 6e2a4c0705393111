"""A small PyTorch transformer encoder written by torch.onnx.export and read by the ONNX reader."""
import numpy as np
import pytest

import cntk as C

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper  # noqa: E402

VOCAB, D_MODEL, CLASSES = 50, 32, 10


def _encoder():
    torch.manual_seed(0)

    class TokenEncoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(VOCAB, D_MODEL)
            layer = torch.nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=64, dropout=0.0,
                                                     batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.head = torch.nn.Linear(D_MODEL, CLASSES)

        def forward(self, tokens):
            return self.head(self.encoder(self.embed(tokens)))

    return TokenEncoder().eval()


def _tokens(batch, length, seed):
    return torch.from_numpy(np.random.RandomState(seed).randint(0, VOCAB, (batch, length)))


def _export(model, tokens, path, **kw):
    # Outside no_grad: there PyTorch takes its fused encoder-layer kernel, which has no ONNX form.
    torch.onnx.export(model, (tokens,), path, dynamo=False, opset_version=17, input_names=['tokens'],
                      output_names=['logits'], **kw)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("batch, length", [(2, 7), (3, 5)])
def test_a_torch_transformer_encoder_exported_at_fixed_shapes_matches_pytorch(tmp_path, batch, length):
    # The classic exporter at fixed shapes: every Shape/Gather/Concat chain of the attention's
    # reshapes is read as a constant, so the file reads as a static graph of that shape.
    model = _encoder()
    tokens = _tokens(batch, length, seed=batch)
    path = str(tmp_path / 'encoder.onnx')
    _export(model, tokens, path)
    op_types = {n.op_type for n in onnx.load(path).graph.node}
    assert {'LayerNormalization', 'Softmax', 'Gather', 'Shape', 'Slice'} <= op_types
    f = C.Function.load(path, format=C.ModelFormat.ONNX)
    assert f.arguments[0].shape == (batch, length)
    got = np.asarray(f.eval({f.arguments[0]: tokens.numpy().astype(np.float32)}))
    with torch.no_grad():
        want = model(tokens).numpy()
    assert got.shape == want.shape == (batch, length, CLASSES)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_file_with_dynamic_axes_reads_at_two_batch_sizes_once_its_input_dims_are_fixed(tmp_path):
    # With dynamic_axes the attention's reshapes read their sizes through Shape nodes, which the
    # reader folds only for known dims: a symbolic dim is free and its Shape is refused. Fixing
    # the graph input's dims before reading makes each shape a static graph. PyTorch's trace
    # keeps the sequence length as a constant in one of the attention's reshapes (ONNX Runtime
    # also refuses another length), so only the batch size varies.
    model = _encoder()
    path = str(tmp_path / 'encoder_dynamic.onnx')
    _export(model, _tokens(2, 7, seed=0), path,
            dynamic_axes={'tokens': {0: 'batch', 1: 'sequence'}, 'logits': {0: 'batch', 1: 'sequence'}})
    with pytest.raises((ValueError, NotImplementedError), match='free dimension'):
        C.Function.load(path, format=C.ModelFormat.ONNX)
    for batch in (2, 3):
        m = onnx.load(path)
        dims = m.graph.input[0].type.tensor_type.shape.dim
        assert dims[0].dim_param == 'batch' and dims[1].dim_param == 'sequence'
        dims[0].dim_value, dims[1].dim_value = batch, 7
        f = C.load_model(m.SerializeToString(), format=C.ModelFormat.ONNX)
        tokens = _tokens(batch, 7, seed=10 + batch)
        got = np.asarray(f.eval({f.arguments[0]: tokens.numpy().astype(np.float32)}))
        with torch.no_grad():
            want = model(tokens).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_an_int64_constant_node_keeps_its_exact_values_as_slice_bounds():
    # PyTorch writes "to the end" as a Constant node holding INT64_MAX, which float32 cannot hold.
    end = helper.make_tensor('end', TensorProto.INT64, [1], [np.iinfo(np.int64).max])
    nodes = [
        helper.make_node('Constant', [], ['starts'], value=helper.make_tensor('s', TensorProto.INT64, [1], [1])),
        helper.make_node('Constant', [], ['ends'], value=end),
        helper.make_node('Constant', [], ['axes'], value_ints=[1]),
        helper.make_node('Slice', ['x', 'starts', 'ends', 'axes'], ['y']),
    ]
    graph = helper.make_graph(nodes, 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 5])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2, 4])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    f = C.load_model(m.SerializeToString(), format=C.ModelFormat.ONNX)
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    np.testing.assert_array_equal(f.eval({f.arguments[0]: x}), x[:, 1:])
