# Developer targets. `make test` is what CI runs; the others are for iteration.
JOBS ?= $(shell nproc)

.PHONY: format format-check
.PHONY: deps dev test test-quick cpp-test sanitize tsan bench bench-overhead bench-deps demo clean compat
.PHONY: keras-tests keras-backend-tests
.PHONY: onnx-backend-tests
.PHONY: fuzz-cbf fuzz-image fuzz-htk
.PHONY: fuzz-ctf bench-readers fuzz-model bench-model-files fuzz-brainscript fuzz-onnx
.PHONY: csharp nupkg

deps:
	bash scripts/install-deps.sh

# Builds the C++ tests and the extension in place (python/cntk/_cntk*.so): PYTHONPATH=python works.
dev:
	cmake -S . -B build/dev -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build/dev -j $(JOBS)

test:
	bash scripts/test.sh

# The C/C++ style (.clang-format): `format` applies it, `format-check` (run by `make test`) fails on a difference.
format:
	bash scripts/format.sh

format-check:
	bash scripts/format.sh --check

# Fast loop: in-place build, C++ tests, Python tests without the slow accuracy runs.
test-quick: dev
	ctest --test-dir build/dev --output-on-failure -j $(JOBS)
	cd tests && PYTHONPATH=../python python3 -m pytest -q -x -m "not slow" python

# CNTK 2.7's own Python test suite (../shared/cntk-tests, unmodified) against the installed
# package, checked against tests/compat/expected_failures.txt (see tests/compat/README.md).
# CI runs it from scripts/test.sh after `pip install .`. Some modules: make compat COMPAT_PATHS=cntk/ops/tests
compat:
	python3 tests/compat/check.py $(COMPAT_PATHS)

# Keras 2.3.1's own tests with KERAS_BACKEND=cntk (tests/keras_suite/README.md): the backend
# tests, checked against tests/keras_suite/expected_failures.txt, and the whole suite with a
# per-module table (docs/keras.md holds the last one).
keras-backend-tests:
	PYTHONPATH=python python3 tests/keras_suite/run.py

keras-tests:
	PYTHONPATH=python python3 tests/keras_suite/run.py --all --table build/keras-suite.md

# ONNX's backend test cases (onnx.backend.test) over cntk.onnx_backend and over CNTK 2.7's
# adapter, with the per-op-type table of docs/onnx.md (tests/onnx_backend/README.md).
onnx-backend-tests:
	PYTHONPATH=python python3 tests/onnx_backend/run.py --table docs/onnx.md

cpp-test: dev
	ctest --test-dir build/dev --output-on-failure -j $(JOBS)

# AddressSanitizer + UndefinedBehaviorSanitizer: the C++ tests, then the Python tests
# against a sanitized extension (staged with the package sources in build/asan/pkg;
# the interpreter's own allocations are not leak-checked).
sanitize:
	cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCNTK_SANITIZE=ON -DCNTK_BUILD_PYTHON=ON >/dev/null
	cmake --build build/asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build/asan --output-on-failure -j $(JOBS)
	rm -rf build/asan/pkg && mkdir -p build/asan/pkg && cp -r python/cntk python/_cntk_py build/asan/pkg/
	rm -f build/asan/pkg/cntk/_cntk*.so && cp build/asan/extension/_cntk*.so build/asan/pkg/cntk/
	cd tests && LD_PRELOAD=$$(gcc -print-file-name=libasan.so):$$(gcc -print-file-name=libubsan.so) \
	  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  PYTHONPATH=../build/asan/pkg python3 -m pytest -q -p no:cacheprovider -m "not slow" python
	# CNTK's own ops tests against the sanitized extension: no crash, no sanitizer report,
	# and no failure outside tests/compat/expected_failures.txt.
	LD_PRELOAD=$$(gcc -print-file-name=libasan.so):$$(gcc -print-file-name=libubsan.so) \
	  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  PYTHONPATH=build/asan/pkg python3 tests/compat/check.py cntk/ops/tests

# ThreadSanitizer over the thread tests (the contract in docs/architecture.md, "Threads"):
# tests/cpp/test_threads.cpp, then tests/python/test_threads.py against a TSan extension
# staged in build/tsan/pkg. Any report fails the run (TSan's exit code); tests/tsan.supp
# says what is suppressed and why. OMP_NUM_THREADS=1: libgomp and oneDNN are not
# instrumented, so TSan cannot see how their worker threads synchronize (a report between
# two workers of one parallel loop could not be trusted); with one OpenMP thread the
# threads left are the callers', which the contract is about.
# Python is the real interpreter (pyenv's python3 is a bash shim, and bash crashes with
# libtsan preloaded); pytest runs with -s so that reports reach the terminal.
TSAN_PYTHON = $(shell python3 -c 'import sys; print(sys.executable)')
TSAN_ENV = OMP_NUM_THREADS=1 TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp second_deadlock_stack=1"
tsan:
	cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DCNTK_TSAN=ON -DCNTK_BUILD_PYTHON=ON >/dev/null
	cmake --build build/tsan -j $(JOBS) --target cntk_tests _cntk
	$(TSAN_ENV) build/tsan/cntk_tests --gtest_filter='Threads.*'
	rm -rf build/tsan/pkg && mkdir -p build/tsan/pkg && cp -r python/cntk python/_cntk_py build/tsan/pkg/
	rm -f build/tsan/pkg/cntk/_cntk*.so && cp build/tsan/extension/_cntk*.so build/tsan/pkg/cntk/
	cd tests && $(TSAN_ENV) LD_PRELOAD=$$(gcc -print-file-name=libtsan.so) PYTHONPATH=../build/tsan/pkg \
	  $(TSAN_PYTHON) -m pytest -q -s -p no:cacheprovider -p no:randomly python/test_threads.py

# The C# API (bindings/csharp) with Mono's mcs: build/csharp/Cntk.Core.Managed.dll beside the C API
# library; `nupkg` packs both as build/csharp/OpenCNTK.CPUOnly.<version>.nupkg (NuGet's layout).
csharp: dev
	mkdir -p build/csharp && cp build/dev/libcntk_c.so build/csharp/
	mcs -nologo -target:library -optimize+ -out:build/csharp/Cntk.Core.Managed.dll -r:System.Core bindings/csharp/src/*.cs

nupkg: dev
	python3 bindings/csharp/make_nupkg.py build/dev/libcntk_c.so build/csharp

# The peers the benchmarks compare with, pinned (torch, tensorflow-cpu, keras) in build/bench-venv, and the
# Fashion-MNIST data.
bench-deps:
	bash bench/install-peers.sh

# The benchmark suite: every workload of bench/workloads in OpenCNTK, PyTorch and TensorFlow, equivalence check
# first, both OpenMP wait policies; writes bench/results/<date>-suite.{json,md,png} and the README table.
# Some: python3 bench/suite.py --workloads mlp,cnn; the check alone: python3 bench/suite.py --check
bench: dev bench-deps
	PYTHONPATH=python python3 bench/suite.py

# Framework overhead (vs PyTorch) and the MLP epoch (bench/run.py).
bench-overhead: dev bench-deps
	PYTHONPATH=python python3 bench/run.py

demo:
	bash scripts/demo.sh

clean:
	rm -rf build python/cntk/_cntk*.so

# libFuzzer over the CBF reader (not part of `make test`); seeds are CNTK's CBF files. Needs clang.
FUZZ_SECONDS ?= 600
fuzz-cbf:
	@command -v clang++ >/dev/null || { echo "fuzz-cbf needs clang++ with libFuzzer: apt-get install clang libclang-rt-dev"; exit 1; }
	mkdir -p build/fuzz/cbf-corpus && cp -n ../shared/data/cbf-reader/*.bin build/fuzz/cbf-corpus/ 2>/dev/null || true
	clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -Isrc \
	  tests/fuzz/fuzz_cbf.cpp src/io/cbf_deserializer.cpp -o build/fuzz/fuzz_cbf
	build/fuzz/fuzz_cbf -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=build/fuzz/ -max_len=65536 -rss_limit_mb=2048 build/fuzz/cbf-corpus

# libFuzzer over JPEG/PNG decoding and base64 (not part of `make test`); seeds are small encoded images.
fuzz-image:
	@command -v clang++ >/dev/null || { echo "fuzz-image needs clang++ with libFuzzer: apt-get install clang libclang-rt-dev"; exit 1; }
	mkdir -p build/fuzz/image-corpus
	clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fopenmp -Iinclude -Isrc \
	  tests/fuzz/fuzz_image.cpp src/io/image_codec.cpp src/io/image_uncompressed.cpp src/io/image_deserializer.cpp src/core/common.cpp \
	  -lpng -ljpeg -o build/fuzz/fuzz_image
	PYTHONPATH=python python3 -c "import numpy as np; from cntk import _cntk; \
	  img = (np.arange(8 * 6 * 3) % 251).astype(np.uint8).reshape(8, 6, 3); \
	  [_cntk._write_image('build/fuzz/image-corpus/seed.' + f, img, f) for f in ('png', 'jpeg')]; \
	  [_cntk._write_image('build/fuzz/image-corpus/grey.' + f, img[:, :, 0].copy(), f) for f in ('png', 'jpeg')]" \
	  || echo "no seeds (build the extension first: make dev)"
	python3 -c "import numpy as np; from PIL import Image; \
	  img = Image.fromarray((np.arange(5 * 7 * 3) % 251).astype(np.uint8).reshape(5, 7, 3)); \
	  [img.save('build/fuzz/image-corpus/seed.' + f) for f in ('bmp', 'ppm', 'tiff')]; \
	  [img.convert('L').save('build/fuzz/image-corpus/grey.' + f) for f in ('pgm', 'tiff')]" || echo "no BMP/PNM/TIFF seeds (Pillow)"
	build/fuzz/fuzz_image -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=build/fuzz/ -max_len=16384 -rss_limit_mb=2048 build/fuzz/image-corpus

# libFuzzer target for the CTF parser and deserializer (clang; not part of `make test`).
# Seeds: CNTK's CTF reader-test inputs. FUZZ_SECONDS=60 for a short run.
CLANGXX ?= $(shell command -v clang++ || command -v clang++-14)
fuzz-ctf:
	mkdir -p build/fuzz/ctf-corpus
	$(CLANGXX) -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -Iinclude -Isrc tests/fuzz/fuzz_ctf.cpp src/io/ctf_parser.cpp src/io/ctf_deserializer.cpp src/core/common.cpp \
	  -o build/fuzz/fuzz_ctf
	for f in ../shared/data/ctf-reader/*.txt; do [ -f "$$f" ] && head -c 4000 "$$f" | (printf '\000'; cat) > build/fuzz/ctf-corpus/seed_$$(basename $$f); done; true
	build/fuzz/fuzz_ctf -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 build/fuzz/ctf-corpus

# Read throughput of MinibatchSource over CTF and CBF (ATIS, Fashion-MNIST); writes bench/results/<date>-readers.*
bench-readers: dev
	PYTHONPATH=python python3 bench/readers.py

# Save/load time and file size of model files (Fashion-MNIST CNN, ATIS LSTM) vs torch.save/torch.load;
# writes bench/results/<date>-model-files.{json,md}
bench-model-files: dev
	PYTHONPATH=python python3 bench/model_files.py

# libFuzzer target for the CNTK v2 model loader (clang, ASan + UBSan); not part of `make test`.
# The engine is built with clang and fuzzer instrumentation in build/fuzz; crashes land in build/fuzz/model-artifacts.
FUZZ_MODEL_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g
fuzz-model:
	cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link $(FUZZ_MODEL_FLAGS)" -DCNTK_BUILD_PYTHON=OFF -DCNTK_BUILD_TESTS=OFF >/dev/null
	cmake --build build/fuzz -j $(JOBS) --target cntk cntk_proto
	clang++ -std=c++20 -fsanitize=fuzzer $(FUZZ_MODEL_FLAGS) -Iinclude -Isrc tests/fuzz/fuzz_model.cpp \
	  build/fuzz/libcntk.a build/fuzz/libcntk_proto.a -lprotobuf -ldnnl -fopenmp -o build/fuzz/fuzz_model
	mkdir -p build/fuzz/model-corpus build/fuzz/model-artifacts
	cp -f ../shared/data/cntk-files/v2/* build/fuzz/model-corpus/ 2>/dev/null || true
	cp -f ../shared/data/cntk-files/v1/LR_reg.dnn ../shared/data/cntk-files/v1/MC.dnn build/fuzz/model-corpus/ 2>/dev/null || true
	PYTHONPATH=python python3 tests/fuzz/make_model_seeds.py build/fuzz/model-corpus || echo "no seed models (build the extension with make dev first)"
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 build/fuzz/fuzz_model -max_total_time=$(FUZZ_SECONDS) \
	  -rss_limit_mb=4096 -artifact_prefix=build/fuzz/model-artifacts/ build/fuzz/model-corpus

# libFuzzer target for the ONNX reader (clang, ASan + UBSan; not part of `make test`). The reader's
# files (src/onnx/import*.cpp, tensor.cpp) are compiled with coverage and sanitizers; the rest of
# the engine is linked from build/dev (make dev first). Crashes land in build/fuzz/onnx-artifacts.
FUZZ_ONNX_SRCS = src/onnx/import.cpp src/onnx/tensor.cpp $(wildcard src/onnx/import_*.cpp)
fuzz-onnx:
	@test -f build/dev/libcntk.a || { echo "fuzz-onnx links the engine of build/dev: run make dev first"; exit 1; }
	mkdir -p build/fuzz/onnx-obj build/fuzz/onnx-corpus build/fuzz/onnx-artifacts
	printf '%s\n' $(FUZZ_ONNX_SRCS) | xargs -P $(JOBS) -I{} sh -c 'clang++ -std=c++20 -O1 -fsanitize=fuzzer-no-link \
	  $(FUZZ_MODEL_FLAGS) -fopenmp -Iinclude -Isrc -Ibuild/dev -c {} -o build/fuzz/onnx-obj/$$(basename {} .cpp).o'
	clang++ -std=c++20 -fsanitize=fuzzer $(FUZZ_MODEL_FLAGS) -Iinclude -Isrc tests/fuzz/fuzz_onnx.cpp build/fuzz/onnx-obj/*.o \
	  build/dev/libcntk.a build/dev/libcntk_proto.a -lprotobuf -ldnnl -lpng -ljpeg -lz -fopenmp -o build/fuzz/fuzz_onnx
	PYTHONPATH=python python3 tests/fuzz/make_onnx_seeds.py build/fuzz/onnx-corpus || echo "no seed models (build the extension with make dev first)"
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 build/fuzz/fuzz_onnx -max_total_time=$(FUZZ_SECONDS) \
	  -rss_limit_mb=4096 -max_len=65536 -artifact_prefix=build/fuzz/onnx-artifacts/ build/fuzz/onnx-corpus

# libFuzzer target for the HTK feature-file, MLF, label-mapping and SCP parsers (clang; not part of `make test`).
fuzz-htk:
	@command -v clang++ >/dev/null || { echo "fuzz-htk needs clang++ with libFuzzer: apt-get install clang libclang-rt-dev"; exit 1; }
	mkdir -p build/fuzz/htk-corpus
	clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -Isrc \
	  tests/fuzz/fuzz_htk.cpp src/io/htk_features.cpp src/io/mlf.cpp src/core/common.cpp -o build/fuzz/fuzz_htk
	python3 tests/fuzz/make_htk_seeds.py build/fuzz/htk-corpus
	build/fuzz/fuzz_htk -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=build/fuzz/ -max_len=4096 -timeout=10 -rss_limit_mb=2048 build/fuzz/htk-corpus

# libFuzzer target for the BrainScript parser, the config language, the NDL reader and the MEL parser
# (clang; not part of `make test`). Seeds: CNTK's parser test inputs and config files, the NDL and MEL
# texts of the tests. FUZZ_SECONDS=60 for a short run.
fuzz-brainscript:
	mkdir -p build/fuzz/brainscript-corpus build/fuzz/brainscript-files
	$(CLANGXX) -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -Iinclude -Isrc tests/fuzz/fuzz_brainscript.cpp src/brainscript/parser.cpp src/brainscript/config.cpp \
	  src/brainscript/ndl.cpp src/brainscript/mel.cpp src/core/common.cpp -o build/fuzz/fuzz_brainscript
	python3 tests/fuzz/make_brainscript_seeds.py build/fuzz/brainscript-corpus build/fuzz/brainscript-files
	for f in ../shared/cntk-brainscript/Tests/EndToEndTests/Simple2d/*_ndl_deprecated.cntk; do \
	  [ -f "$$f" ] && (printf '\003'; cat "$$f") > build/fuzz/brainscript-corpus/ndl_$$(basename $$f); done; true
	for f in ../shared/cntk-brainscript/Tests/UnitTests/BrainScriptTests/Data/Parser/Input*.txt; do \
	  [ -f "$$f" ] && (printf '\000'; cat "$$f") > build/fuzz/brainscript-corpus/bs_$$(basename $$f); done; true
	for f in ../shared/cntk-brainscript/Tutorials/HelloWorld-LogisticRegression/*.cntk ../shared/cntk-brainscript/Tests/EndToEndTests/Simple2d/*.cntk; do \
	  [ -f "$$f" ] && (printf '\002'; cat "$$f") > build/fuzz/brainscript-corpus/cfg_$$(basename $$f); done; true
	build/fuzz/fuzz_brainscript -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
	  -artifact_prefix=build/fuzz/ build/fuzz/brainscript-corpus
