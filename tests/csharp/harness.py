"""Builds OpenCNTK's C# assembly and CNTK's C# examples with Mono and checks their output
against CNTK's baselines (the ExampleTests/*/testcases.yml patterns), as CNTK's test driver
does. Used by tests/python/test_csharp.py."""
import os
import re
import shutil
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SHARED = os.path.abspath(os.path.join(ROOT, '..', 'shared'))
CSHARP = os.path.join(SHARED, 'cntk-csharp')
EXAMPLE_TESTS = os.path.join(CSHARP, 'Tests', 'EndToEndTests', 'CNTKv2CSharp', 'ExampleTests')

# CNTK's files the training driver compiles, unmodified.
TRAINING_SOURCES = [
    'Examples/TrainingCSharp/Common/LogisticRegression.cs',
    'Examples/TrainingCSharp/Common/TestHelper.cs',
    'Examples/TrainingCSharp/Common/MNISTClassifier.cs',
    'Examples/TrainingCSharp/Common/LSTMSequenceClassifier.cs',
    'Tests/EndToEndTests/CNTKv2CSharp/CNTKLibraryCSTrainingTest/SimpleFeedForwardClassifierTest.cs',
]


def native_library():
    """The C API library of the newest build (CI's build/cpp, make dev's build/dev), or
    $CNTK_C_LIBRARY. The sanitizer build's library is not used: Mono does not run under
    AddressSanitizer (the C examples are the C API's sanitizer tests, run by ctest)."""
    if os.environ.get('CNTK_C_LIBRARY'):
        return os.environ['CNTK_C_LIBRARY']
    found = [p for p in (os.path.join(ROOT, 'build', b, 'libcntk_c.so') for b in ('cpp', 'dev')) if os.path.exists(p)]
    if not found:
        raise RuntimeError("libcntk_c.so is not built: run `make dev` (or scripts/test.sh, which builds build/cpp)")
    return max(found, key=os.path.getmtime)


def mcs(args, cwd):
    r = subprocess.run(['mcs', '-nologo', '-warn:0'] + args, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("mcs failed:\n" + r.stdout + r.stderr)


def build_assembly(out_dir):
    """Compiles bindings/csharp into out_dir/Cntk.Core.Managed.dll next to a copy of libcntk_c.so."""
    os.makedirs(out_dir, exist_ok=True)
    sources = sorted(os.path.join(ROOT, 'bindings', 'csharp', 'src', f)
                     for f in os.listdir(os.path.join(ROOT, 'bindings', 'csharp', 'src')) if f.endswith('.cs'))
    mcs(['-target:library', '-out:Cntk.Core.Managed.dll', '-r:System.Core'] + sources, out_dir)
    shutil.copy(native_library(), os.path.join(out_dir, 'libcntk_c.so'))
    return os.path.join(out_dir, 'Cntk.Core.Managed.dll')


def build_program(out_dir, name, sources, extra_refs=()):
    refs = ['-r:Cntk.Core.Managed.dll', '-r:System.Core'] + ['-r:' + r for r in extra_refs]
    mcs(['-out:' + name] + refs + list(sources), out_dir)
    return os.path.join(out_dir, name)


def run(exe, args, cwd, timeout=600):
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(exe) + ':' + os.environ.get('LD_LIBRARY_PATH', ''))
    env.pop('LD_PRELOAD', None)  # make sanitize preloads ASan for Python; Mono runs without it
    r = subprocess.run(['mono', '--debug', exe] + list(args), cwd=cwd, capture_output=True, text=True,
                       timeout=timeout, env=env)
    return r.returncode, r.stdout, r.stderr


EVAL_SOURCES = [
    'Examples/Evaluation/CNTKLibraryCSEvalCPUOnlyExamples/CNTKLibraryCSEvalExamples.cs',
    'Examples/Evaluation/CNTKLibraryCSEvalCPUOnlyExamples/CNTKExtensions.cs',
]


def for_mcs(path, out_dir):
    """A copy of a C# file that Mono's mcs (C# 7) compiles: C# 9's target-typed `new(...)`, which
    CNTKLibraryCSEvalExamples.cs uses 7 times, gets its type spelled out from the declaration
    (`Bitmap bmp = new(x)` -> `Bitmap bmp = new Bitmap(x)`). Nothing else changes."""
    with open(path, encoding='utf-8-sig') as f:
        text = f.read()
    text = re.sub(r'([\w<>\[\],]+)(\s+\w+\s*=\s*)new\(', r'\1\2new \1(', text)
    copy = os.path.join(out_dir, os.path.basename(path))
    with open(copy, 'w', encoding='utf-8') as f:
        f.write(text)
    return copy


# ------------------------------------------------------------------ baselines

def test_patterns(test_name):
    """The patterns of each test case of ExampleTests/<test_name>/testcases.yml (commented-out
    lines are not patterns)."""
    cases, current, in_cases = {}, None, False
    with open(os.path.join(EXAMPLE_TESTS, test_name, 'testcases.yml')) as f:
        for line in f:
            if line.lstrip().startswith('#') or not line.strip():
                continue
            if line.startswith('testCases:'):
                in_cases = True
                continue
            if not in_cases:
                continue
            m = re.match(r'^  (\S.*):\s*$', line)
            if m:
                current = m.group(1)
                continue
            m = re.match(r'^\s+- (.*\S)\s*$', line)
            if m and current is not None:
                cases.setdefault(current, []).append(m.group(1))
    return cases


def baseline_lines(test_name):
    with open(os.path.join(EXAMPLE_TESTS, test_name, 'baseline.txt')) as f:
        return f.read().splitlines()


_FLOAT = r'([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan)'


def _pattern_regex(pattern):
    """A pattern such as 'CrossEntropyLoss = {{float,tolerance=0.1%}}' as a regex with one group
    per placeholder, and the placeholders' tolerances."""
    parts, tolerances, pos = [], [], 0
    for m in re.finditer(r'\{\{(\w+)(?:,tolerance=([\d.]+)(%?))?\}\}', pattern):
        parts.append(re.escape(pattern[pos:m.start()]))
        kind = m.group(1)
        parts.append(_FLOAT if kind == 'float' else r'([-+]?\d+)')
        tolerances.append((float(m.group(2)) if m.group(2) else 0.0, m.group(3) == '%'))
        pos = m.end()
    parts.append(re.escape(pattern[pos:]))
    return re.compile(''.join(parts)), tolerances


def compare(pattern, baseline, output):
    """Compares the lines matching `pattern` in the baseline and the output as CNTK's test
    driver does: the same number of matching lines, and each placeholder value within its
    tolerance (relative with %, else absolute). Returns a list of mismatch messages."""
    regex, tolerances = _pattern_regex(pattern)
    expected = [m for m in map(regex.search, baseline) if m]
    actual = [m for m in map(regex.search, output) if m]
    if len(expected) != len(actual):
        return ["%r: %d lines in the baseline, %d in the output" % (pattern, len(expected), len(actual))]
    errors = []
    for e, a in zip(expected, actual):
        for i, (tol, relative) in enumerate(tolerances):
            x, y = float(e.group(i + 1)), float(a.group(i + 1))
            allowed = tol / 100 * abs(x) if relative else tol
            if abs(x - y) > allowed:
                errors.append("%r: expected %s, got %s (tolerance %s%s) in %r" % (
                    pattern, e.group(i + 1), a.group(i + 1), tol, '%' if relative else '', a.string))
    return errors


# ------------------------------------------------------------------ data

def write_fashion_mnist_ctf(folder, train_count, test_count):
    """CNTK's MNIST CTF layout (|labels one-hot, |features 784 raw pixel values 0..255) from the
    first images of Debian's Fashion-MNIST, as Train_cntk_text.txt and Test_cntk_text.txt."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, 'examples', 'python'))
    import fashion_mnist_data
    import numpy as np
    os.makedirs(folder, exist_ok=True)
    for kind, count, name in (('train', train_count, 'Train_cntk_text.txt'), ('test', test_count, 'Test_cntk_text.txt')):
        images, labels = fashion_mnist_data.load(kind)
        pixels = np.rint(images[:count].reshape(count, -1) * 255).astype(np.int64)
        with open(os.path.join(folder, name), 'w') as f:
            for img, label in zip(pixels, labels[:count]):
                onehot = ' '.join('1' if c == label else '0' for c in range(10))
                f.write('|labels %s |features %s\n' % (onehot, ' '.join(map(str, img))))


def write_sequence_classification_ctf(path, sequences, vocabulary=2000, classes=5, seed=7):
    """Sequences of word indices (|x, sparse over `vocabulary`) with one class label each (|y,
    one-hot, on the first line), CNTK's SequenceClassification layout. Each class has its own
    frequent words, so the class can be learned from the words of a sequence."""
    import numpy as np
    rng = np.random.RandomState(seed)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        for s in range(sequences):
            label = rng.randint(classes)
            length = rng.randint(2, 8)
            for t in range(length):
                word = rng.randint(label * 50, label * 50 + 50) if rng.rand() < 0.5 else rng.randint(vocabulary)
                y = ' |y ' + ' '.join('1' if c == label else '0' for c in range(classes)) if t == 0 else ''
                f.write('%d |x %d:1%s\n' % (s, word, y))
