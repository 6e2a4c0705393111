"""Several Python threads using the engine at once (the GIL is released in forward and
backward): one model evaluated from many threads gives the single-thread outputs, and
different models trained in parallel end where training them one after another ends."""
import threading

import numpy as np

import cntk as C


def _run_threads(n, work):
    errors = []

    def guarded(k):
        try:
            work(k)
        except Exception as e:  # reported to the test's thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def _check_concurrent_eval(model, x, data, n_threads=8, rounds=10):
    expected = model.eval({x: data})
    mismatches = []

    def work(_):
        for _ in range(rounds):
            got = model.eval({x: data})
            for g, e in zip(got if isinstance(got, list) else [got], expected if isinstance(expected, list) else [expected]):
                if not np.allclose(g, e, atol=1e-6):
                    mismatches.append(1)

    _run_threads(n_threads, work)
    assert not mismatches


def test_one_lstm_model_evaluated_from_eight_threads():
    # Fused recurrences: cached primitives executed concurrently, each with its own scratchpad.
    x = C.sequence.input_variable(8)
    model = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(32)), C.layers.Dense(4)])(x)
    data = [np.random.RandomState(i).rand(3 + i, 8).astype(np.float32) for i in range(6)]
    _check_concurrent_eval(model, x, data)


def test_one_unfused_recurrence_evaluated_from_eight_threads():
    # Step-by-step loops: the delays' carries are per-function state written by every call.
    x = C.sequence.input_variable(4)
    h = C.placeholder()
    r = C.tanh(C.times(x, C.parameter((4, 6), init=C.glorot_uniform(seed=1))) +
               C.times(C.sequence.past_value(h), C.parameter((6, 6), init=C.glorot_uniform(seed=2))))
    r.replace_placeholders({h: r.output})
    data = [np.random.RandomState(i).rand(2 + i, 4).astype(np.float32) for i in range(5)]
    _check_concurrent_eval(r, x, data)


def _train(seed, steps=30):
    rng = np.random.RandomState(seed)
    x = C.input_variable(10)
    y = C.input_variable(3)
    z = C.layers.Sequential([C.layers.Dense(16, activation=C.relu, init=C.glorot_uniform(seed=seed)),
                             C.layers.Dropout(0.2, seed=seed),
                             C.layers.Dense(3, init=C.glorot_uniform(seed=seed + 100))])(x)
    loss = C.cross_entropy_with_softmax(z, y)
    trainer = C.Trainer(z, loss, [C.adam(z.parameters, C.learning_parameter_schedule(0.01), C.momentum_schedule(0.9))])
    for _ in range(steps):
        features = rng.rand(32, 10).astype(np.float32)
        labels = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 32)]
        trainer.train_minibatch({x: features, y: labels})
    return [p.value.copy() for p in z.parameters]


def test_four_models_trained_in_four_threads_match_sequential_training():
    expected = [_train(seed) for seed in range(4)]
    got = [None] * 4

    def work(k):
        got[k] = _train(k)

    _run_threads(4, work)
    for g, e in zip(got, expected):
        for a, b in zip(g, e):
            np.testing.assert_array_equal(a, b)
