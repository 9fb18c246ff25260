# Two commands set everything up on a fresh machine with Python 3.11 and make:
#   make lab   - create .venv if needed, install the pinned dependencies, open your copy of the course in JupyterLab
#   make test  - create .venv if needed and run every test
#   make book  - execute every chapter and write the static HTML book to build/book/index.html
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
JOBS   ?= 2

# The edition: `make lab LANG=zh` / `make book LANG=zh` give the Chinese one (中文版). Only a LANG given on make's
# command line counts: LANG in the environment is the shell's locale (en_US.UTF-8), never an edition. The
# recipes then run without that LANG, so the locale of the programs they start is not "zh".
# (zh, ZH, zh-CN, zh_CN.UTF-8 all name the Chinese edition)
EDITION := $(shell echo '$(if $(filter command line,$(origin LANG)),$(LANG),en)' | tr 'A-Z_.' 'a-z--' | cut -d- -f1)
NOLANG  := $(if $(filter command line,$(origin LANG)),env -u LANG,)

.PHONY: lab lab-fresh test test-fast bench venv clean exercises book grade

venv: $(STAMP)

# Each step says what it does before it starts; pip shows what it downloads and installs (the first run
# downloads several hundred MB and takes minutes; the README gives the sizes).
$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || { echo "make: [1/5] creating the virtual environment $(VENV)/ with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "make: [2/5] upgrading pip in $(VENV)/"
	@$(PY) -m pip install --quiet --upgrade pip
	@echo "make: [3/5] installing the pinned dependencies of requirements.txt (pip's own progress follows)"
	@$(PY) -m pip install --progress-bar on -r requirements.txt
	@echo "make: [4/5] installing fp8lab itself (editable)"
	@$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	@echo "make: [5/5] registering the Jupyter kernel python3 of $(VENV)/"
	@$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $(STAMP)
	@echo "make: $(VENV)/ is ready; to run the fp8lab command: source $(VENV)/bin/activate (or $(VENV)/bin/fp8lab --help)"

# make lab opens your own working copy of the course (my_course/, made from notebooks/ on first run,
# never overwritten); extra JupyterLab arguments go in ARGS, e.g. make lab ARGS="--port=8890 --no-browser"
lab: $(STAMP)
	$(NOLANG) $(PY) -m fp8lab.course.lab $(ARGS) --lang $(EDITION)

# lab-fresh puts my_course/ aside (renamed with the date, nothing deleted) and starts from a new copy
lab-fresh: $(STAMP)
	$(NOLANG) $(PY) -m fp8lab.course.lab --fresh $(ARGS) --lang $(EDITION)

# make test runs every test; the longest start first and tests sharing an expensive fixture go to one
# worker (--dist load with tests/conftest.py's scheduler). make test-fast runs the library tests only: nothing that
# starts a Jupyter kernel, server or nbgrader, a browser, an exhaustive sweep or a long training run
# (the markers are described in pyproject.toml; e.g. `make test MARKS=kernel` runs the kernel tests).
MARKS ?=
FAST  := not kernel and not browser and not exhaustive and not slow

test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist load --durations=15 $(if $(MARKS),-m "$(MARKS)")

test-fast: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist load --durations=15 -m "$(FAST)" fp8lab tests

bench: $(STAMP)
	$(PY) bench/codec.py
	$(PY) bench/scaling.py
	$(PY) bench/gemm.py
	$(PY) bench/gemm_units.py

# both editions are made from the same executed chapters (build/executed, a content-keyed cache): after
# `make book`, `make book LANG=zh` executes nothing again and writes build/book/zh/
book: $(STAMP)
	$(NOLANG) $(PY) tools/book.py --out build/book$(if $(filter-out en,$(EDITION)),/$(EDITION)) --jobs $(JOBS) \
		--cache build/executed --lang $(EDITION)

exercises: $(STAMP)
	$(PY) -m fp8lab.labs generate

# make grade LAB=01_decode_exmy SUBMISSIONS=folder/of/<student id>.ipynb [JOBS=2]: generate, collect,
# autograde (each submission in the bubblewrap sandbox: it refuses to grade where none can start),
# the findings report, feedback, export (.grading/grades.csv); each step is also an `fp8lab labs` command
grade: $(STAMP)
	@test -n "$(LAB)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade LAB=01_decode_exmy SUBMISSIONS=folder [JOBS=2]"; exit 2; }
	$(PY) -m fp8lab.labs generate $(LAB)
	$(PY) -m fp8lab.labs collect $(LAB) $(SUBMISSIONS)
	$(PY) -m fp8lab.labs autograde $(LAB) --jobs $(JOBS)
	$(PY) -m fp8lab.labs report $(LAB)
	$(PY) -m fp8lab.labs feedback $(LAB)
	$(PY) -m fp8lab.labs export

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
