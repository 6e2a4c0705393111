"""cntk.logging: progress output formats, TensorBoard event files, graph utilities."""
import os

import numpy as np
import pytest

import cntk as C
from cntk.logging import ProgressPrinter, TensorBoardProgressWriter, TrainingSummaryProgressCallback
from cntk.logging import graph as G


def test_progress_printer_arithmetic_schedule(capsys):
    p = ProgressPrinter(freq=2, first=1, tag='Training')
    for i in range(5):
        p.update_training(10, 10.0 * (i + 1), 5.0)
    p.write_training_summary()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ' Minibatch[   1-   1]: loss = 1.000000 * 10, metric = 50.00% * 10;'
    assert out[1] == ' Minibatch[   2-   2]: loss = 2.000000 * 10, metric = 50.00% * 10;'
    assert out[2] == ' Minibatch[   3-   4]: loss = 3.500000 * 20, metric = 50.00% * 20;'
    assert out[3].startswith('Finished Epoch[1]: [Training] loss = 3.000000 * 50, metric = 50.00% * 50 ')
    # With the total given, CNTK writes "Epoch[n of total]".
    p = ProgressPrinter(freq=2, num_epochs=5)
    p.update_training(10, 10.0, 5.0)
    p.write_training_summary()
    assert capsys.readouterr().out.splitlines()[-1].startswith('Finished Epoch[1 of 5]: loss = 1.000000 * 10')


def test_progress_printer_geometric_schedule(capsys):
    p = ProgressPrinter(freq=0)
    for i in range(5):
        p.update_training(1, 1.0)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].strip().startswith('average')
    assert len(lines) == 3 + 3  # header, then after minibatches 1, 2 and 4


def test_progress_printer_test_summary_and_file(tmp_path, capsys):
    log = str(tmp_path / 'log.txt')
    p = ProgressPrinter(log_to_file=log, metric_is_pct=False)
    p.update_test(4, 2.0)
    p.write_test_summary()
    p.end_progress_print()
    text = open(log).read()
    assert 'Finished Evaluation [1]: Minibatch[1-1]: metric = 0.500000 * 4;' in text
    assert 'CNTKCommandTrainEnd: train' in text


def test_training_summary_callback():
    seen = []
    cb = TrainingSummaryProgressCallback(100, lambda *a: seen.append(a))
    cb.update_training(10, 5.0, 1.0)
    cb.write_training_summary()
    assert seen == [(0, 0.5, 0.1, 10)]


def test_tensorboard_events_read_back(tmp_path):
    ea_module = pytest.importorskip('tensorboard.backend.event_processing.event_accumulator')
    w = TensorBoardProgressWriter(freq=1, log_dir=str(tmp_path))
    for i in range(3):
        w.update_training(10, 10.0 * (i + 1), 1.0)
    w.write_training_summary()
    w.write_value('custom/lr', 0.25, 7)
    w.close()
    with pytest.raises(RuntimeError):
        w.flush()
    acc = ea_module.EventAccumulator(str(tmp_path))
    acc.Reload()
    tags = acc.Tags()['scalars']
    assert {'minibatch/avg_loss', 'minibatch/avg_metric', 'summary/avg_loss', 'custom/lr'} <= set(tags)
    losses = [(e.step, round(e.value, 4)) for e in acc.Scalars('minibatch/avg_loss')]
    assert losses == [(1, 1.0), (2, 2.0), (3, 3.0)]
    assert acc.Scalars('custom/lr')[0].value == pytest.approx(0.25)
    assert acc.Scalars('summary/avg_loss')[0].value == pytest.approx(2.0)


def test_log_number_of_parameters(capsys):
    x = C.input_variable(3)
    C.logging.log_number_of_parameters(C.layers.Dense(4)(x))
    assert 'Training 16 parameters in 2 parameter tensors.' in capsys.readouterr().out
    C.logging.log_number_of_parameters(C.layers.Dense(4))
    assert 'so far unspecified' in capsys.readouterr().out


def test_graph_search_and_plot(tmp_path):
    x = C.input_variable(2, name='features')
    z = C.layers.Dense(3, name='dense')(x)
    assert G.find_by_name(z, 'dense').op_name == 'Dense'
    assert G.find_by_name(z, 'W').shape == (2, 3)
    assert G.find_by_name(z, 'nothing') is None
    assert G.find_by_uid(z, x.uid) == x
    assert len(G.find_all_with_name(z, 'W')) == 1
    inner = G.depth_first_search(z, lambda n: isinstance(n, C.Function), depth=-1)
    assert {'Dense', 'Times', 'Plus'} <= {f.op_name for f in inner}
    assert len(G.get_node_outputs(z)) == 1
    dot_file = str(tmp_path / 'g.dot')
    dot = G.plot(z, dot_file)
    assert 'digraph' in dot and os.path.exists(dot_file)
    import shutil
    if shutil.which('dot') is None:
        with pytest.raises(RuntimeError, match='graphviz'):
            G.plot(z, str(tmp_path / 'g.png'))
    else:
        G.plot(z, str(tmp_path / 'g.png'))
        assert os.path.getsize(str(tmp_path / 'g.png')) > 0


def test_trace_level():
    C.logging.set_trace_level(C.logging.TraceLevel.Info)
    assert C.logging.get_trace_level() == C.logging.TraceLevel.Info
    C.logging.set_trace_level(0)


def test_progress_writer_subclass_of_cntk_py_receives_learning_rates():
    # CNTK's writers subclassed cntk_py.ProgressWriter and called __disown__() in their constructor.
    class Writer(C.cntk_py.ProgressWriter):
        def __init__(self):
            super(Writer, self).__init__(1, 0, 1, 0, 10, 0)
            self.values = []
            assert self.__disown__() is self

        def write(self, key, value):
            self.values.append((key, float(value)))

    x = C.input_variable(1)
    z = C.layers.Dense(1)(x)
    w = Writer()
    t = C.Trainer(z, C.squared_error(z, x), [C.sgd(z.parameters, C.learning_parameter_schedule([0.5, 0.25], epoch_size=1))], w)
    for _ in range(3):
        t.train_minibatch({x: np.float32([[1]])})
    assert [v for _, v in w.values] == [0.5, 0.25]  # each rate once, as it comes into use


def test_tensorboard_write_image_writes_png_summaries(tmpdir):
    import glob
    import struct
    import zlib
    x = C.input_variable((3, 2, 4))
    batch = np.zeros((2, 3, 2, 4), np.float32)
    batch[1, 0] = 300.0  # channel 0 is blue (CNTK's BGR order); values saturate at 255
    batch[1, 2, 1, 3] = 7.4
    w = C.logging.TensorBoardProgressWriter(log_dir=str(tmpdir))
    w.write_image('img', {x: batch}, 5)
    w.close()
    data = open(glob.glob(str(tmpdir / 'events.out.tfevents.*'))[0], 'rb').read()
    assert b'img/image/0' in data and b'img/image/1' in data
    pngs = data.split(b'\x89PNG\r\n\x1a\n')[1:]
    assert len(pngs) == 2
    png = pngs[1]
    assert png[4:8] == b'IHDR' and struct.unpack('>II', png[8:16]) == (4, 2)  # width, height
    idat = png.index(b'IDAT')
    size = struct.unpack('>I', png[idat - 4:idat])[0]
    rows = zlib.decompress(png[idat + 4:idat + 4 + size])
    pixels = np.frombuffer(rows, np.uint8).reshape(2, 1 + 4 * 3)[:, 1:].reshape(2, 4, 3)
    assert (pixels[..., 2] == 255).all()               # blue, stored last in RGB
    assert pixels[1, 3, 0] == 7 and pixels[0, 0, 0] == 0
