# Developer targets. `make test` is what CI runs; the others are for iteration.
JOBS ?= $(shell nproc)

.PHONY: deps dev test test-quick cpp-test sanitize bench bench-deps demo clean

deps:
	bash scripts/install-deps.sh

# Builds the C++ tests and the extension in place (python/cntk/_cntk*.so): PYTHONPATH=python works.
dev:
	cmake -S . -B build/dev -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build/dev -j $(JOBS)

test:
	bash scripts/test.sh

# Fast loop: in-place build, C++ tests, Python tests without the slow accuracy runs.
test-quick: dev
	ctest --test-dir build/dev --output-on-failure -j $(JOBS)
	cd tests && PYTHONPATH=../python python3 -m pytest -q -x -m "not slow" python

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

# The peers the benchmarks compare with (PyTorch, TensorFlow) and the Fashion-MNIST data.
bench-deps:
	bash bench/install-peers.sh

# Every workload of bench/run.py; one only: PYTHONPATH=python python3 bench/run.py --workloads mlp_epoch
bench: dev bench-deps
	PYTHONPATH=python python3 bench/run.py

demo:
	bash scripts/demo.sh

clean:
	rm -rf build python/cntk/_cntk*.so

# libFuzzer target for the CNTK v2 model loader (clang, ASan + UBSan); not part of `make test`.
# The engine is built with clang and fuzzer instrumentation in build/fuzz; crashes land in build/fuzz/model-artifacts.
FUZZ_SECONDS ?= 600
FUZZ_MODEL_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g
.PHONY: fuzz-model
fuzz-model:
	cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link $(FUZZ_MODEL_FLAGS)" -DCNTK_BUILD_PYTHON=OFF -DCNTK_BUILD_TESTS=OFF >/dev/null
	cmake --build build/fuzz -j $(JOBS) --target cntk cntk_proto
	clang++ -std=c++20 -fsanitize=fuzzer $(FUZZ_MODEL_FLAGS) -Iinclude -Isrc tests/fuzz/fuzz_model.cpp \
	  build/fuzz/libcntk.a build/fuzz/libcntk_proto.a -lprotobuf -ldnnl -fopenmp -o build/fuzz/fuzz_model
	mkdir -p build/fuzz/model-corpus build/fuzz/model-artifacts
	cp -f ../shared/data/cntk-files/v2/* build/fuzz/model-corpus/ 2>/dev/null || true
	PYTHONPATH=python python3 tests/fuzz/make_model_seeds.py build/fuzz/model-corpus || echo "no seed models (build the extension with make dev first)"
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 build/fuzz/fuzz_model -max_total_time=$(FUZZ_SECONDS) \
	  -rss_limit_mb=4096 -artifact_prefix=build/fuzz/model-artifacts/ build/fuzz/model-corpus
