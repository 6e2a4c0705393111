"""cntk.layers.models.attention.AttentionModel: the attended encoder state against a
NumPy implementation of CNTK's equations (encoder and decoder sequences of different
lengths, over different sequence axes), float64 gradient checks, attention inside a
decoder recurrence, the deprecated windowed form, and a small sequence-to-sequence
model with attention that learns."""
import warnings

import numpy as np
import pytest

import cntk as C
from cntk.layers import (AttentionModel, Recurrence, LSTM, Dense, Embedding, Stabilizer, Sequential,
                         default_options)
from seq_harness import as_sequences, random_sequences, seq_gradcheck

ENC_LENGTHS = [3, 1, 4]
DEC_LENGTHS = [2, 3, 1]
ENC_DIM, DEC_DIM, ATT_DIM = 3, 2, 4


def stab(alpha):
    # the Stabilizer's scale: softplus(4 * alpha) / 4
    return np.log1p(np.exp(4 * alpha)) / 4


def softmax(u):
    e = np.exp(u - u.max())
    return e / e.sum()


def encoder_decoder_inputs(dtype=np.float64):
    h_enc = C.sequence.input_variable(ENC_DIM, dtype=dtype, sequence_axis=C.Axis('enc'), name='h_enc')
    h_dec = C.sequence.input_variable(DEC_DIM, dtype=dtype, sequence_axis=C.Axis('dec'), name='h_dec')
    return h_enc, h_dec


def attention_params(f, rng, alpha):
    """Random projections (told apart by their shapes) and stabilizer scales `alpha`."""
    by_shape = {}
    for p in f.parameters:
        if p.name == 'alpha':
            p.value = np.full(p.shape, alpha)
        else:
            p.value = rng.standard_normal(p.shape) * 0.7
            by_shape[p.shape] = p.value
    return by_shape[(ENC_DIM, ATT_DIM)], by_shape[(DEC_DIM, ATT_DIM)], by_shape[(ATT_DIM, 1)]


def numpy_attention(enc, dec_state, We, Wd, v, s):
    """CNTK's attention for one decoder state over one encoder sequence (all stabilizer
    scales s): sum_i softmax_i(v . tanh(s*enc_i@We + s*dec@Wd)) * enc_i, scaled by s."""
    dec_proj = (s * dec_state) @ Wd
    u = np.array([(s * np.tanh((s * e) @ We + dec_proj)) @ v for e in enc]).reshape(-1)
    w = softmax(u)
    return s * (w[:, None] * enc).sum(axis=0)


@pytest.mark.parametrize("stabilize", [False, True])
def test_attention_matches_numpy_over_sequences_of_different_lengths(stabilize):
    rng = np.random.RandomState(0)
    h_enc, h_dec = encoder_decoder_inputs()
    with default_options(dtype=np.float64):
        att = AttentionModel(ATT_DIM, enable_self_stabilization=stabilize)
    z = att(h_enc, h_dec)
    assert z.shape == (ENC_DIM,)
    assert len(z.parameters) == (7 if stabilize else 3)
    We, Wd, v = attention_params(z, rng, alpha=0.3)
    s = stab(0.3) if stabilize else 1.0
    enc = random_sequences(rng, ENC_LENGTHS, (ENC_DIM,))
    dec = random_sequences(rng, DEC_LENGTHS, (DEC_DIM,))
    got = as_sequences(z.eval({h_enc: enc, h_dec: dec}))
    assert [g.shape for g in got] == [(n, ENC_DIM) for n in DEC_LENGTHS]
    for g, e, d in zip(got, enc, dec):
        ref = np.array([numpy_attention(e, dt, We, Wd, v, s) for dt in d])
        np.testing.assert_allclose(g, ref, rtol=1e-9, atol=1e-12)


def test_attention_weights_are_labelled_and_ignore_padding():
    # The weights over the encoder items sum to 1 per decoder step, padding items get 0,
    # and the attended state is a convex combination of the sequence's own items.
    rng = np.random.RandomState(1)
    h_enc, h_dec = encoder_decoder_inputs()
    with default_options(dtype=np.float64):
        z = AttentionModel(ATT_DIM)(h_enc, h_dec)
    attention_params(z, rng, alpha=0.1)
    weights = z.find_by_name('attention_weights')
    assert weights is not None
    enc = random_sequences(rng, ENC_LENGTHS, (ENC_DIM,))
    dec = random_sequences(rng, DEC_LENGTHS, (DEC_DIM,))
    w = as_sequences(weights.eval({h_enc: enc, h_dec: dec}))
    longest = max(ENC_LENGTHS)
    for wb, n_enc, n_dec in zip(w, ENC_LENGTHS, DEC_LENGTHS):
        wb = wb.reshape(n_dec, longest)
        np.testing.assert_allclose(wb.sum(axis=1), 1.0, rtol=1e-12)
        assert np.all(wb[:, n_enc:] == 0) and np.all(wb[:, :n_enc] > 0)


def test_attention_gradients():
    rng = np.random.RandomState(2)
    h_enc, h_dec = encoder_decoder_inputs()
    with default_options(dtype=np.float64):
        z = AttentionModel(ATT_DIM)(h_enc, h_dec)
    attention_params(z, rng, alpha=0.2)
    enc = random_sequences(rng, ENC_LENGTHS, (ENC_DIM,))
    dec = random_sequences(rng, DEC_LENGTHS, (DEC_DIM,))
    seq_gradcheck(z, {h_enc: enc, h_dec: dec}, rtol=1e-5, atol=1e-8)


def numpy_lstm_step(dh, dc, x, p):
    d = dh.shape[0]
    zz = p['b'] + x @ p['W'] + dh @ p['H']
    g = [zz[k * d:(k + 1) * d] for k in range(4)]
    sig = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
    c = sig(g[2]) * dc + sig(g[0]) * np.tanh(g[1])
    return sig(g[3]) * np.tanh(c), c


def _decoder_with_attention(hidden):
    """CNTK_204's first decoder layer: an LSTM whose input is the decoder input spliced
    with the encoder states attended by the previous decoder state."""
    with default_options(dtype=np.float64):
        attention = AttentionModel(ATT_DIM, enable_self_stabilization=False)
        cell = LSTM(hidden)

    # as in CNTK_204: the step function closes over the encoder states, a placeholder
    # of the enclosing @Function until the model is called on data variables
    @C.Function
    def decoder(encoded, x):
        @C.Function
        def lstm_with_attention(dh, dc, xt):
            return cell(dh, dc, C.splice(xt, attention(encoded, dh)))
        return Recurrence(lstm_with_attention)(x)
    return decoder, cell


def test_attention_inside_a_decoder_recurrence_matches_numpy():
    rng = np.random.RandomState(3)
    hidden = 2
    h_enc, x_dec = encoder_decoder_inputs()
    decoder, cell = _decoder_with_attention(hidden)
    z = decoder(h_enc, x_dec)
    assert z.shape == (hidden,)
    by_name = {}
    for p in z.parameters:
        p.value = rng.standard_normal(p.shape) * 0.6
        by_name.setdefault(p.name, []).append(p)
    lstm = {n: by_name[n][0].value for n in ('b', 'H')}
    lstm['W'] = next(p.value for p in by_name['W'] if p.shape == (DEC_DIM + ENC_DIM, 4 * hidden))
    Wd = next(p.value for p in by_name['W'] if p.shape == (hidden, ATT_DIM))
    We = next(p.value for p in by_name['W'] if p.shape == (ENC_DIM, ATT_DIM))
    v = next(p.value for p in by_name['W'] if p.shape == (ATT_DIM, 1))
    enc = random_sequences(rng, ENC_LENGTHS, (ENC_DIM,))
    dec = random_sequences(rng, DEC_LENGTHS, (DEC_DIM,))
    got = as_sequences(z.eval({h_enc: enc, x_dec: dec}))
    for g, e, d in zip(got, enc, dec):
        h, c, ref = np.zeros(hidden), np.zeros(hidden), []
        for xt in d:
            att = numpy_attention(e, h, We, Wd, v, 1.0)
            h, c = numpy_lstm_step(h, c, np.concatenate([xt, att]), lstm)
            ref.append(h)
        np.testing.assert_allclose(g, np.array(ref), rtol=1e-9, atol=1e-12)
    seq_gradcheck(z, {h_enc: enc, x_dec: dec})


# ---- the windowed form (attention_span, attention_axis) -------------------------------

def numpy_windowed_attention(enc, dec_state, We, Wd, v, s, span, backwards):
    """CNTK's deprecated windowed attention: the last `span` items, newest first (the
    first ones with backwards), zero-padded; padded items get 50 less score."""
    items = enc[:span] if backwards else enc[::-1][:span]
    window = np.zeros((span, enc.shape[1]))
    window[:len(items)] = items
    valid = np.arange(span) < len(items)
    dec_proj = (s * dec_state) @ Wd
    u = np.array([(s * np.tanh((s * w) @ We + dec_proj)) @ v for w in window]).reshape(-1)
    u = u + (valid - 1.0) * 50
    weights = softmax(u)
    return s * (weights[:, None] * window).sum(axis=0, keepdims=True)


@pytest.mark.parametrize("backwards", [False, True])
def test_windowed_attention_matches_numpy(backwards):
    rng = np.random.RandomState(4)
    span = 2
    h_enc, h_dec = encoder_decoder_inputs()
    with default_options(dtype=np.float64):
        with pytest.warns(DeprecationWarning):
            att = AttentionModel(ATT_DIM, attention_span=span, attention_axis=-2, go_backwards=backwards)
    z = att(h_enc, h_dec)
    assert z.shape == (1, ENC_DIM)
    We, Wd, v = attention_params(z, rng, alpha=-0.2)
    s = stab(-0.2)
    enc = random_sequences(rng, ENC_LENGTHS, (ENC_DIM,))
    dec = random_sequences(rng, DEC_LENGTHS, (DEC_DIM,))
    got = as_sequences(z.eval({h_enc: enc, h_dec: dec}))
    for g, e, d in zip(got, enc, dec):
        ref = np.array([numpy_windowed_attention(e, dt, We, Wd, v, s, span, backwards) for dt in d])
        np.testing.assert_allclose(g, ref, rtol=1e-9, atol=1e-12)
    seq_gradcheck(z, {h_enc: enc, h_dec: dec}, wrt=[h_enc, h_dec])


def test_attention_arguments_are_checked():
    with pytest.raises(ValueError, match='attention_axis'):
        AttentionModel(4, attention_span=3)
    with pytest.raises(ValueError, match='attention_span'):
        AttentionModel(4, attention_axis=-2)
    with pytest.raises(ValueError, match='positive'):
        AttentionModel(4, attention_span=0, attention_axis=-2)
    with pytest.raises(TypeError):
        AttentionModel(4, attention_span=2.5, attention_axis=-2)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        AttentionModel(4)  # the default form is not deprecated


def test_attention_names_defaults_and_modules():
    import cntk.layers.models
    import cntk.layers.models.attention
    assert cntk.layers.models.AttentionModel is cntk.layers.models.attention.AttentionModel
    assert C.layers.AttentionModel is cntk.layers.models.AttentionModel
    h_enc, h_dec = encoder_decoder_inputs(np.float32)
    named = AttentionModel(3, name='my_attention')
    assert named.name == 'my_attention'
    assert named(h_enc, h_dec).shape == (ENC_DIM,)
    # default_options_for reaches the layer's defaults (no stabilizers: no 'alpha' parameters)
    from cntk.default_options import default_options_for
    with default_options_for(AttentionModel, enable_self_stabilization=False):
        plain = AttentionModel(3)(h_enc, h_dec)
    assert sorted(p.name for p in plain.parameters) == ['W', 'W', 'W']
    stabilized = AttentionModel(3)(h_enc, h_dec)
    assert sorted(p.name for p in stabilized.parameters).count('alpha') == 4
    # init reaches the projections
    const = AttentionModel(3, init=0.5, enable_self_stabilization=False)(h_enc, h_dec)
    assert all(np.all(p.value == 0.5) for p in const.parameters)


# ---- a small sequence-to-sequence model with attention --------------------------------

def test_sequence_to_sequence_with_attention_trains():
    # Reverse a token sequence: the decoder needs the encoder items in the other order,
    # which attention gives it. Teacher forcing: the decoder reads the previous label.
    rng = np.random.RandomState(5)
    vocab, hidden = 5, 16
    src = C.sequence.input_variable(vocab, sequence_axis=C.Axis('inputAxis'), name='src')
    tgt = C.sequence.input_variable(vocab, sequence_axis=C.Axis('labelAxis'), name='tgt')
    embed = Embedding(8)
    encode = Sequential([embed, Stabilizer(), Recurrence(LSTM(hidden))])
    attention = AttentionModel(hidden)
    cell = LSTM(hidden)
    out_proj = Dense(vocab)


    @C.Function
    def decode(history, source):
        encoded = encode(source)

        @C.Function
        def lstm_with_attention(dh, dc, x):
            return cell(dh, dc, C.splice(x, attention(encoded, dh)))
        return out_proj(Recurrence(lstm_with_attention)(embed(history)))
    z = decode(C.sequence.past_value(tgt), src)
    loss = C.cross_entropy_with_softmax(z, tgt)
    err = C.classification_error(z, tgt)
    learner = C.adam(z.parameters, lr=C.learning_parameter_schedule_per_sample(0.03),
                     momentum=C.momentum_schedule(0.9))
    trainer = C.Trainer(z, (loss, err), [learner])

    def batch(size):
        xs, ys = [], []
        for _ in range(size):
            tokens = rng.randint(0, vocab, rng.randint(2, 6))
            xs.append(np.eye(vocab, dtype=np.float32)[tokens])
            ys.append(np.eye(vocab, dtype=np.float32)[tokens[::-1]])
        return xs, ys
    losses = []
    for _ in range(60):
        xs, ys = batch(16)
        trainer.train_minibatch({src: xs, tgt: ys})
        losses.append(trainer.previous_minibatch_loss_average)
    assert all(np.isfinite(losses))
    assert np.mean(losses[-10:]) < 0.6 * np.mean(losses[:5]), losses


# ---- engine support the attention model relies on -------------------------------------

def test_unpack_inside_a_function_has_both_outputs():
    # A @Function over placeholders knows that sequence.unpack has two outputs (the
    # padded tensor and the mask) before its input's type is known.
    @C.Function
    def masked_sum(s):
        padded, mask = C.sequence.unpack(s, padding_value=7.0).outputs
        return C.reduce_sum(padded, axis=0) + C.reduce_sum(mask)
    x = C.sequence.input_variable(2, dtype=np.float64)
    data = [np.arange(6.0).reshape(3, 2), np.ones((1, 2))]
    got = np.asarray(masked_sum(x).eval({x: data})).reshape(2, 2)
    np.testing.assert_allclose(got, [data[0].sum(axis=0) + 3, data[1].sum(axis=0) + 2 * 7.0 + 1])

    @C.Function
    def no_mask(s):
        return C.sequence.unpack(s, padding_value=0, no_mask_output=True)
    assert len(no_mask.outputs) == 1


def test_loop_values_with_a_free_dimension():
    # Inside a recurrence, a value as long as another sequence (the unpacked encoder,
    # broadcast to each step) gets its buffer from the first step's shape; forward and
    # gradients over sequences of different lengths.
    enc = C.sequence.input_variable(2, dtype=np.float64, sequence_axis=C.Axis('enc'), name='enc')
    dec = C.sequence.input_variable(2, dtype=np.float64, sequence_axis=C.Axis('dec'), name='dec')

    @C.Function
    def model(e, d):
        padded = C.sequence.unpack(e, padding_value=0, no_mask_output=True)   # (free, 2)

        @C.Function
        def step(h, x):
            items = C.sequence.broadcast_as(padded, h)                        # (free, 2) at each step
            return C.tanh(x + C.reshape(C.reduce_sum(items * h, axis=0), (2,)))
        return Recurrence(step, initial_state=C.Constant(np.zeros(2)))(d)
    z = model(enc, dec)
    rng = np.random.RandomState(6)
    e_data = random_sequences(rng, [3, 1], (2,))
    d_data = random_sequences(rng, [2, 3], (2,))
    got = as_sequences(z.eval({enc: e_data, dec: d_data}))
    for g, e, d in zip(got, e_data, d_data):
        h, ref = np.zeros(2), []
        for x in d:
            h = np.tanh(x + (e * h).sum(axis=0))
            ref.append(h)
        np.testing.assert_allclose(g, np.array(ref), rtol=1e-12)
    seq_gradcheck(z, {enc: e_data, dec: d_data})
