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


def _matches_pytorch_at(model, f, inputs):
    for x in inputs:
        got = np.asarray(f.eval({f.arguments[0]: x.numpy().astype(np.float32)}))
        with torch.no_grad():
            want = model(x).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_torch_transformer_encoder_with_a_dynamic_batch_axis_reads_once_and_runs_at_any_batch_size(tmp_path):
    # The attention's reshapes read the batch size through Shape -> Gather -> Mul -> Concat
    # chains: folded over the free dimension, they become the engine's inferred dimensions.
    model = _encoder()
    path = str(tmp_path / 'encoder_batch.onnx')
    _export(model, _tokens(2, 7, seed=0), path, dynamic_axes={'tokens': {0: 'batch'}, 'logits': {0: 'batch'}})
    f = C.Function.load(path, format=C.ModelFormat.ONNX)
    assert f.arguments[0].shape == (C.FreeDimension, 7)
    _matches_pytorch_at(model, f, [_tokens(2, 7, seed=1), _tokens(5, 7, seed=2)])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_file_with_a_dynamic_sequence_axis_is_refused_where_its_trace_fixed_the_length(tmp_path):
    # PyTorch's trace keeps the sequence length as a constant in one of the attention's
    # reshapes (ONNX Runtime refuses another length too): the reader says so at that node.
    # Fixing the graph input's dims before reading makes each shape a static graph.
    model = _encoder()
    path = str(tmp_path / 'encoder_dynamic.onnx')
    _export(model, _tokens(2, 7, seed=0), path,
            dynamic_axes={'tokens': {0: 'batch', 1: 'sequence'}, 'logits': {0: 'batch', 1: 'sequence'}})
    with pytest.raises(ValueError, match='free dimension'):
        C.Function.load(path, format=C.ModelFormat.ONNX)
    for batch in (2, 3):
        m = onnx.load(path)
        dims = m.graph.input[0].type.tensor_type.shape.dim
        assert dims[0].dim_param == 'batch' and dims[1].dim_param == 'sequence'
        dims[0].dim_value, dims[1].dim_value = batch, 7
        f = C.load_model(m.SerializeToString(), format=C.ModelFormat.ONNX)
        _matches_pytorch_at(model, f, [_tokens(batch, 7, seed=10 + batch)])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_torch_transformer_encoder_exported_with_dynamic_shapes_runs_at_any_batch_size_and_length(tmp_path):
    # PyTorch's newer exporter keeps both dims symbolic. Its attention merges [s, b, h, d] into
    # [s * b, h * d] for the output projection and splits the result back into [s, b, h * d]:
    # the reader redoes the merge keeping s and b apart and applies the projection over it.
    pytest.importorskip("onnxscript")
    model = _encoder()
    path = str(tmp_path / 'encoder_dynamo.onnx')
    batch, seq = torch.export.Dim('batch', min=1, max=64), torch.export.Dim('seq', min=2, max=256)
    torch.onnx.export(model, (_tokens(2, 7, seed=0),), path, dynamo=True, opset_version=18, input_names=['tokens'],
                      output_names=['logits'], dynamic_shapes={'tokens': {0: batch, 1: seq}})
    f = C.Function.load(path, format=C.ModelFormat.ONNX)
    assert f.arguments[0].shape == (C.FreeDimension, C.FreeDimension)
    _matches_pytorch_at(model, f, [_tokens(2, 7, seed=6), _tokens(3, 5, seed=7)])
    # It trains: the loss of the read model falls over five steps of SGD on its parameters.
    out = C.to_batch(f.output)  # the file's free leading dim as the batch axis
    y = C.input_variable((5, CLASSES))
    loss = C.reduce_sum(C.square(out - y), axis=C.Axis.all_static_axes())
    trainer = C.Trainer(out, (loss, None), [C.sgd(f.parameters, C.learning_parameter_schedule(0.01))])
    x = _tokens(3, 5, seed=8).numpy().astype(np.float32)
    target = np.random.RandomState(9).rand(3, 5, CLASSES).astype(np.float32)
    losses = []
    for _ in range(5):
        trainer.train_minibatch({f.arguments[0]: x, y: target})
        losses.append(trainer.previous_minibatch_loss_average)
    assert losses[-1] < losses[0]


class _LanguageModel(torch.nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 16)
        bidirectional = cell == 'bigru'
        rnn = torch.nn.LSTM if cell == 'lstm' else torch.nn.GRU
        self.rnn = rnn(16, 24, num_layers=2, batch_first=True, bidirectional=bidirectional)
        self.head = torch.nn.Linear(48 if bidirectional else 24, VOCAB)

    def forward(self, tokens):
        return self.head(self.rnn(self.embed(tokens))[0])


class _ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.head = torch.nn.Linear(8, CLASSES)

    def forward(self, x):
        y = torch.nn.functional.adaptive_avg_pool2d(torch.relu(self.norm(self.conv(x))), 1)
        return self.head(torch.flatten(y, 1))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("cell", ['lstm', 'bigru'])
def test_a_two_layer_rnn_lm_with_dynamic_batch_and_sequence_axes_runs_at_any_size(tmp_path, cell):
    # The zero initial state is ConstantOfShape over [layers, Shape(x)[0], hidden]: its batch
    # size comes from the graph input at run time. The bidirectional GRU's output is reshaped
    # by [0, 0, -1] over two free dims (the sequence's made by the recurrence).
    torch.manual_seed(0)
    model = _LanguageModel(cell).eval()
    path = str(tmp_path / 'lm.onnx')
    _export(model, _tokens(2, 7, seed=0), path,
            dynamic_axes={'tokens': {0: 'batch', 1: 'sequence'}, 'logits': {0: 'batch', 1: 'sequence'}})
    assert 'ConstantOfShape' in {n.op_type for n in onnx.load(path).graph.node}
    f = C.Function.load(path, format=C.ModelFormat.ONNX)
    assert f.arguments[0].shape == (C.FreeDimension, C.FreeDimension)
    _matches_pytorch_at(model, f, [_tokens(2, 7, seed=3), _tokens(3, 4, seed=4)])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_cnn_with_a_dynamic_batch_axis_runs_at_any_batch_size(tmp_path):
    torch.manual_seed(0)
    model = _ConvNet().eval()
    path = str(tmp_path / 'cnn.onnx')
    torch.onnx.export(model, (torch.randn(2, 3, 8, 8),), path, dynamo=False, opset_version=17, input_names=['x'],
                      output_names=['y'], dynamic_axes={'x': {0: 'batch'}, 'y': {0: 'batch'}})
    f = C.Function.load(path, format=C.ModelFormat.ONNX)
    assert f.arguments[0].shape == (C.FreeDimension, 3, 8, 8)
    gen = torch.Generator().manual_seed(5)
    _matches_pytorch_at(model, f, [torch.randn(2, 3, 8, 8, generator=gen), torch.randn(4, 3, 8, 8, generator=gen)])


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
