# Developer targets. `make test` is what CI runs; the others are for iteration.
JOBS ?= $(shell nproc)

.PHONY: deps dev test test-quick cpp-test sanitize bench bench-overhead bench-deps demo clean

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

# The benchmark suite: every workload of bench/workloads in OpenCNTK, PyTorch and TensorFlow;
# writes bench/results/<date>-suite.{json,md,png}. Some: PYTHONPATH=python python3 bench/suite.py --workloads mlp,cnn
bench: dev bench-deps
	PYTHONPATH=python python3 bench/suite.py

# Framework overhead (vs PyTorch) and the MLP epoch (bench/run.py).
bench-overhead: dev bench-deps
	PYTHONPATH=python python3 bench/run.py

demo:
	bash scripts/demo.sh

clean:
	rm -rf build python/cntk/_cntk*.so
