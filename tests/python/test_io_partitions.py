"""MinibatchSource partitions (workers), CNTK's rule: every partition walks the same global order and
reads its own units of it. In file order partition k of n reads every n-th sequence; randomized, it
reads the sequences of every n-th chunk of the sweep's chunk order. A call gives each partition its
share of the minibatch size, and max_samples counts the samples of all partitions."""
import numpy as np
import pytest

from cntk.io import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs


def numbered(tmp_path, n=60, name='part.ctf'):
    """Sequence i has i % 4 + 1 steps, each `i t`."""
    lines = ['%d |x %d %d' % (i, i, t) for i in range(n) for t in range(i % 4 + 1)]
    path = tmp_path / name
    path.write_text('\n'.join(lines) + '\n')
    return str(path)


def source(path, chunk_bytes=120, **kw):
    return MinibatchSource(CTFDeserializer(path, StreamDefs(x=StreamDef('x', 2)), chunk_size_in_bytes=chunk_bytes),
                           **kw)


def read_all(src, size, parts=1, index=0):
    """The minibatches of one partition until the end: a list of lists of sequence ids."""
    out = []
    while True:
        mb = src.next_minibatch(size, num_data_partitions=parts, partition_index=index)
        if not mb:
            return out
        out.append([int(s[0, 0]) for s in mb[src.streams.x].as_sequences()])
        assert mb[src.streams.x].num_samples == sum(i % 4 + 1 for i in out[-1])


def share(size, parts, index):
    return max(1, size // parts + (1 if size % parts > index else 0))


@pytest.mark.parametrize('parts', [2, 3])
def test_file_order_partitions_take_every_nth_sequence(tmp_path, parts):
    path = numbered(tmp_path)
    whole = [i for mb in read_all(source(path, randomize=False, max_sweeps=2), 10) for i in mb]
    assert whole == list(range(60)) * 2
    for k in range(parts):
        mbs = read_all(source(path, randomize=False, max_sweeps=2), 10, parts, k)
        assert [i for mb in mbs for i in mb] == whole[k::parts]  # each sequence once per sweep, by one worker
        for mb in mbs:  # whole sequences up to the partition's share of the size (at least one)
            assert len(mb) == 1 or sum(i % 4 + 1 for i in mb) <= share(10, parts, k)


def test_randomized_partitions_take_whole_chunks(tmp_path):
    path = numbered(tmp_path)
    whole_src = source(path, randomization_seed=4, max_sweeps=1)
    assert len(whole_src._impl.sweep_order(0)) == 60
    whole = [i for mb in read_all(whole_src, 10) for i in mb]
    chunk_of = {i: c for i, (c, _) in zip(whole, whole_src._impl.sweep_order(0))}
    chunks = sorted(set(chunk_of.values()))
    assert len(chunks) >= 6
    got = []
    for k in range(2):
        ids = [i for mb in read_all(source(path, randomization_seed=4, max_sweeps=1), 10, 2, k) for i in mb]
        assert ids == [i for i in whole if chunk_of[i] in {chunk_of[j] for j in ids}]  # the global order, filtered
        got.append({chunk_of[i] for i in ids})
        assert len(got[-1]) in (len(chunks) // 2, (len(chunks) + 1) // 2)
    assert not got[0] & got[1] and got[0] | got[1] == set(chunks)  # every chunk on exactly one worker


def test_a_partition_beyond_the_chunks_gets_no_data(tmp_path):
    path = numbered(tmp_path, n=6)  # one chunk
    src = source(path, chunk_bytes=1 << 20)
    assert src.next_minibatch(10, num_data_partitions=2, partition_index=1) == {}
    assert read_all(source(path, chunk_bytes=1 << 20, max_sweeps=1), 10, 2, 0)  # partition 0 has it all


def test_the_size_is_shared_between_partitions(tmp_path):
    path = tmp_path / 'ones.ctf'
    path.write_text(''.join('%d |x %d 0\n' % (i, i) for i in range(40)))  # one-sample sequences
    for parts, size in ((2, 5), (3, 10), (4, 3)):
        for k in range(parts):
            src = source(str(path), randomize=False)
            mb = src.next_minibatch(size, num_data_partitions=parts, partition_index=k)
            assert mb[src.streams.x].num_samples == share(size, parts, k)


def test_max_samples_counts_the_samples_of_all_partitions(tmp_path):
    path = numbered(tmp_path)
    lengths = [i % 4 + 1 for i in range(60)]
    limit = 77
    # the global walk stops at the first sequence that starts at or after `limit` samples
    starts = np.cumsum([0] + lengths)
    end = int(np.argmax(starts >= limit))
    read = []
    for k in range(2):
        read += [i for mb in read_all(source(path, randomize=False, max_samples=limit), 8, 2, k) for i in mb]
    assert sorted(read) == list(range(end))


def test_a_new_request_restarts_the_count_at_the_position(tmp_path):
    path = tmp_path / 'three.ctf'
    path.write_text('0 |x 0 0\n1 |x 1 0\n2 |x 2 0\n')
    src = source(str(path), randomize=False)
    ids = lambda mb: [int(s[0, 0]) for s in mb[src.streams.x].as_sequences()]
    assert ids(src.next_minibatch(1, num_data_partitions=2, partition_index=0)) == [0]
    assert ids(src.next_minibatch(1, num_data_partitions=2, partition_index=0)) == [2]
    # unchanged, the count would go on (3: sequence 0 is partition 1's); a new size restarts it at the
    # position, the start of the second sweep, as CNTK's reader does
    assert ids(src.next_minibatch(2, num_data_partitions=2, partition_index=0)) == [0]
    state = src.get_checkpoint_state()
    assert ids(src.next_minibatch(2, num_data_partitions=2, partition_index=0)) == [2]
    src.restore_from_checkpoint(state)  # restoring restarts it too: position 1 is partition 1's
    assert ids(src.next_minibatch(2, num_data_partitions=2, partition_index=0)) == [2]
    src.restore_from_checkpoint(state)
    assert ids(src.next_minibatch(2, num_data_partitions=2, partition_index=1)) == [1]


def test_a_single_partition_is_the_whole_reader(tmp_path):
    path = numbered(tmp_path)
    for kw in (dict(randomize=False), dict(randomization_seed=1)):
        a = read_all(source(path, max_sweeps=2, **kw), 9)
        b = read_all(source(path, max_sweeps=2, **kw), 9, 1, 0)
        assert a == b


def test_single_chunk_order_is_cntks(tmp_path):
    # CNTK's sequence shuffle (std::mt19937_64 seeded with seed + sweep; position t swaps with a draw
    # from the whole chunk): the orders below are what it gives for ten sequences, and what makes the
    # partitions' minibatches those of CNTK.
    path = numbered(tmp_path, n=10)
    order = lambda seed, sweep=0: [i for _, i in source(path, chunk_bytes=1 << 20, randomization_seed=seed)
                                   ._impl.sweep_order(sweep)]
    assert order(0) == [4, 7, 3, 9, 1, 2, 8, 6, 5, 0]
    assert order(1) == [1, 2, 8, 6, 5, 7, 0, 9, 3, 4]
    assert order(0, sweep=1) == order(1)
