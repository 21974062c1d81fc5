# Two commands a newcomer needs: `make demo` and `make test`. Everything else is set up by them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY ?= python3.11
VENV := .venv
PYTHON := $(CURDIR)/$(VENV)/bin/python
JARS := $(CURDIR)/.cache/jars
MVN := mvn -q -B -s $(CURDIR)/infra/maven/settings.xml
export PYTHONPATH := $(CURDIR)
# The one environment switch: make demo ENV=local-s3 runs everything against a local S3.
ENV ?= local
export EO_ENV := $(ENV)
# The source a command serves (eo/core/sources/<name>.schema.json): make stream-start SOURCE=orders.
SOURCE ?= clicks
export EO_SOURCE := $(SOURCE)

.PHONY: help setup system venv jars bytecode class-archive data-docs-assets lock demo test test-tools bench-check test-unit test-fast lint fmt chaos bench test-durations flink-venv jars-flink jars-emr jars-aws-emr artifacts job-image cloud-smoke checkov-venv mwaa-venv terraform-tool kafka-start kafka-stop kafka-status \
	airflow airflow-cli airflow-stop airflow-status stream-start stream-standby stream-stop stream-status quarantine clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | column -t -s $$'\t'

setup: system venv jars data-docs-assets class-archive bytecode ## install everything (idempotent; fast the second time)

system: ## Debian packages the platform needs (Java 17, Maven), only when missing
	@bash infra/system-packages.sh

# Every venv installs with uv (pinned, from PyPI): the same pinned versions as pip, in seconds
# instead of minutes (docs/testing.md). The TLS roots are the machine's, as pip's are.
# Compiled to bytecode at install, as pip does: where PYTHONDONTWRITEBYTECODE is set (this
# machine), a module never compiled is compiled again by every process that imports it.
UV_VERSION := 0.13.9
UV := $(CURDIR)/.cache/uv-$(UV_VERSION)/bin/uv
UV_PIP := UV_SYSTEM_CERTS=1 $(UV) pip install -q --compile-bytecode
$(UV): | system
	@rm -rf .cache/uv-$(UV_VERSION) && $(PY) -m venv .cache/uv-$(UV_VERSION)
	@.cache/uv-$(UV_VERSION)/bin/pip install -q --disable-pip-version-check uv==$(UV_VERSION)

venv: $(VENV)/.installed ## the Python venv from requirements.lock
# Order-only on `system`: under make -j (make test) no install starts before Python, Java and
# Maven are there, and a venv or jar already made is not made again because `system` ran.
$(VENV)/.installed: requirements.lock | system $(UV)
	@test -x $(PYTHON) || $(PY) -m venv $(VENV)
	@echo "installing Python packages from requirements.lock"
	@$(UV_PIP) --python $(PYTHON) -r requirements.lock
	@touch $@

jars: $(JARS)/spark/.resolved $(JARS)/kafka/.resolved $(JARS)/aws/.resolved $(JARS)/emr/.resolved $(JARS)/aws-emr/.resolved $(JARS)/reader/.resolved ## the jars Spark, Kafka, S3, EMR (and its smoke's S3A) and the strict reading need (Maven, into .cache/jars)
# One Maven at a time, even under make -j (make test): two resolutions writing the same local
# repository (~/.m2) at once can leave a half-written artifact. The venvs install beside them.
$(JARS)/kafka/.resolved: | $(JARS)/spark/.resolved
$(JARS)/aws/.resolved: | $(JARS)/kafka/.resolved
$(JARS)/reader/.resolved: | $(JARS)/aws/.resolved
$(JARS)/aws-emr/.resolved: | $(JARS)/emr/.resolved
$(JARS)/%/.resolved: infra/maven/%/pom.xml infra/maven/settings.xml | system
	@echo "resolving $* jars with Maven into $(JARS)/$*"
	@rm -rf $(JARS)/$* && mkdir -p $(JARS)/$*
	@$(MVN) -f infra/maven/$*/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(JARS)/$*
	@touch $@

# The strict reading's UDF (jvm/reader) is built, not resolved: this rule wins over the pattern above.
# Its pom compiles into .cache/build/reader; only the jar goes to $(JARS)/reader.
# Its folders too: a source removed changes only its folder's time.
READER_SOURCES := $(shell find jvm/reader/src -name '*.java' -o -type d)
$(JARS)/reader/.resolved: infra/maven/reader/pom.xml infra/maven/settings.xml $(READER_SOURCES) | system
	@echo "building the reader jar with Maven into $(JARS)/reader"
	@rm -rf $(JARS)/reader && mkdir -p $(JARS)/reader
	@$(MVN) -f infra/maven/reader/pom.xml clean package
	@cp $(CURDIR)/.cache/build/reader/effectively-once-reader-*.jar $(JARS)/reader/
	@touch $@

# EMR job runs need the release's connectors and the project's own reader jar (it serves Spark 4.1 and 4.2).
$(JARS)/emr/.resolved: infra/maven/emr/pom.xml infra/maven/settings.xml $(JARS)/reader/.resolved
	@echo "resolving emr jars with Maven into $(JARS)/emr"
	@rm -rf $(JARS)/emr && mkdir -p $(JARS)/emr
	@$(MVN) -f infra/maven/emr/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(JARS)/emr
	@cp $(JARS)/reader/effectively-once-reader-*.jar $(JARS)/emr/
	@touch $@

# The project's own modules compiled once: where PYTHONDONTWRITEBYTECODE is set, every process
# (a spark-submit driver, an Airflow task) would compile what it imports again. A module edited
# after is compiled in memory, as before (Python checks each file's time and size).
bytecode: venv ## the project's modules compiled to bytecode (a second)
	@$(PYTHON) -m compileall -q -j 0 -x '/\.(venv|cache|git)/|/(data|build|reports)/' $(CURDIR) >/dev/null

class-archive: venv jars ## the Spark driver's class archive (JVM AppCDS): every job's JVM starts faster (~40 s, once)
	@$(PYTHON) -m eo.runtime.class_archive

data-docs-assets: .cache/data-docs/.fetched ## the Data Docs' CSS, JS and fonts from the npm registry (pages work offline)
.cache/data-docs/.fetched: infra/data-docs/packages.json $(VENV)/.installed
	@$(PYTHON) -m infra.data_docs_assets
	@touch $@

lock: ## re-resolve pyproject.toml into requirements.lock in a scratch venv
	rm -rf .cache/lock-venv && $(PY) -m venv .cache/lock-venv
	.cache/lock-venv/bin/pip install -q -e '.[dev]'
	{ echo "# Generated by 'make lock' from pyproject.toml: the exact versions 'make setup' installs."; \
	  echo "# Edit pyproject.toml, then run 'make lock'; never edit this file by hand."; \
	  .cache/lock-venv/bin/pip freeze --exclude-editable | sort -f; } > requirements.lock

demo: setup ## start Kafka, produce 1M events, stream, rebuild, verify, print the summary
	$(PYTHON) -m lab.demo $(DEMO_ARGS)

CHECKOV := .cache/checkov-venv/bin/checkov
checkov-venv: $(CHECKOV) ## checkov in a venv of its own (it conflicts with Airflow's dependencies)
$(CHECKOV): infra/checkov-requirements.txt | system $(UV)
	@rm -rf .cache/checkov-venv && $(PY) -m venv .cache/checkov-venv
	@$(UV_PIP) --python .cache/checkov-venv/bin/python -r infra/checkov-requirements.txt

# PyFlink, the benchmark's third system, conflicts with Airflow's pins: a venv of its own, and its
# Kafka connector from Maven like every other jar.
# The Airflow Terraform deploys on MWAA (terraform/mwaa-constraints/<version>/), with MWAA's
# requirements and constraints: the DAGs are imported and parsed on it (tests/dags/test_deployed_airflow.py).
MWAA_AIRFLOW := $(shell python3 -c "import json; print(json.load(open('infra/cloud-versions.json'))['airflow'])")
MWAA_VENV := .cache/mwaa-venv
# MWAA's Python (airflow_python): the machine's pyenv build of it, else python3.12 on the PATH.
MWAA_PY_VERSION := $(shell python3 -c "import json; print(json.load(open('infra/cloud-versions.json'))['airflow_python'])")
MWAA_PY ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/$(MWAA_PY_VERSION).*/bin/python$(MWAA_PY_VERSION)) python$(MWAA_PY_VERSION))
mwaa-venv: $(MWAA_VENV)/.installed-py$(MWAA_PY_VERSION) ## the Airflow MWAA runs ($(MWAA_AIRFLOW), Python $(MWAA_PY_VERSION)) with MWAA's requirements and constraints, in a venv of its own
$(MWAA_VENV)/.installed-py$(MWAA_PY_VERSION): infra/cloud-versions.json terraform/mwaa-requirements.txt $(wildcard terraform/mwaa-constraints/*/*.txt) | system $(UV)
	@$(MWAA_PY) -c "import sys; assert sys.version.startswith('$(MWAA_PY_VERSION).'), sys.version" 2>/dev/null || \
	  { echo "error: no Python $(MWAA_PY_VERSION) (MWAA's) at $(MWAA_PY): install it, or name one with MWAA_PY=..." >&2; exit 3; }
	@echo "installing Airflow $(MWAA_AIRFLOW) as MWAA does, on Python $(MWAA_PY_VERSION), into $(MWAA_VENV) (a few minutes the first time)"
	@rm -rf $(MWAA_VENV) && $(MWAA_PY) -m venv $(MWAA_VENV)
	@$(UV_PIP) --python $(MWAA_VENV)/bin/python apache-airflow==$(MWAA_AIRFLOW) \
	  -r terraform/mwaa-requirements.txt \
	  -c terraform/mwaa-constraints/$(MWAA_AIRFLOW)/airflow_constraints.txt \
	  -c terraform/mwaa-constraints/$(MWAA_AIRFLOW)/mwaa_essential_constraints.txt
	@touch $@

FLINK_PY := .cache/flink-venv/bin/python
flink-venv: $(FLINK_PY) ## PyFlink 2.3 in a venv of its own (for make bench)
$(FLINK_PY): infra/flink-requirements.txt | system $(UV)
	@rm -rf .cache/flink-venv && $(PY) -m venv .cache/flink-venv
	@echo "installing PyFlink into .cache/flink-venv"
	@$(UV_PIP) --python .cache/flink-venv/bin/python -r infra/flink-requirements.txt
	@touch $@
jars-flink: $(JARS)/flink/.resolved ## the Flink Kafka SQL connector, for PyFlink

jars-emr: $(JARS)/emr/.resolved ## the jars EMR Serverless job runs add (aws environment; infra/maven/emr/pom.xml)

artifacts: setup jars-emr ## what terraform apply uploads for the job runs: release jars, job code, entry points, conf (build/artifacts)
	$(PYTHON) -m eo.cloud.emr_serverless build

job-image: venv ## the job image's build context (build/job-image); with Docker and JOB_IMAGE=<repository url>:<tag>, build and push it
	$(PYTHON) -m eo.cloud.job_image build/job-image
	@if [ -n "$(JOB_IMAGE)" ]; then docker build --platform linux/amd64 -t $(JOB_IMAGE) build/job-image && docker push $(JOB_IMAGE); \
	  else echo "set JOB_IMAGE=<job_image_repository_url output>:<tag> to build and push (needs Docker)"; fi

# The smoke's stand-in for the release image's S3 access: hadoop-aws for the Hadoop of the release's PySpark.
jars-aws-emr: $(JARS)/aws-emr/.resolved ## hadoop-aws for the release's PySpark's Hadoop: the cloud smoke's S3A (infra/maven/aws-emr/pom.xml)

cloud-smoke: setup jars-emr jars-aws-emr ## the shipped job artifacts run as EMR Serverless runs them (the release's Spark and Delta), on local S3 + DynamoDB (moto) and Kafka (~4 min)
	$(PYTHON) -m lab.cloud_smoke $(SMOKE_ARGS)

terraform-tool: ## terraform (or OpenTofu, built from the Go module proxy when neither is installed)
	@command -v terraform >/dev/null || command -v tofu >/dev/null || test -x .cache/go/bin/tofu || \
	  { echo "building OpenTofu from the Go module proxy"; GOBIN=$(CURDIR)/.cache/go/bin go install github.com/opentofu/opentofu/cmd/tofu@v1.10.6; }

# What the suite needs, installed side by side (make -j): the venv, the jars (one Maven at a time),
# checkov's and MWAA's venvs, terraform. The lint runs as soon as the venv is there: a lint
# failure stops make test before the suite starts (docs/testing.md).
TEST_TOOLS := lint setup checkov-venv mwaa-venv terraform-tool
SETUP_JOBS ?= 4
test-tools: ## what make test needs, installed side by side (make -j), and the lint
	@$(MAKE) --no-print-directory -j$(SETUP_JOBS) $(TEST_TOOLS)

# Two workers (pytest-xdist), a test file each at a time: many tests wait on servers and
# subprocesses, so two share the machine's two cores. The files go longest first, in the order of
# tests/file_seconds.json, and the workers finish together (tests/file_order.py, docs/testing.md).
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: test-tools ## the lint, then the whole suite: unit, integration, the Airflow UI walk and the chaos smoke
	$(PYTHON) -m pytest $(XDIST) $(PYTEST_ARGS)

test-durations: ## keep the last full run's seconds per test file (tests/file_seconds.json), the workers' order
	$(PYTHON) -m tests.file_order $(DURATIONS)

chaos: setup ## the fault lab: 20 kills, 2 broker restarts, a zombie, 3 delivery guarantees, the operator faults (~20 min); then the same crashes on orders (~10 min)
	EO_SOURCE=clicks $(PYTHON) -m lab.chaos $(CHAOS_ARGS)
	EO_SOURCE=orders $(PYTHON) -m lab.chaos $(CHAOS_ARGS)

bench: setup flink-venv jars-flink ## benchmarks vs raw Spark and PyFlink (~40 min; BENCH_ARGS=--quick: ~12 min, plumbing only)
	$(PYTHON) -m lab.bench $(BENCH_ARGS)

bench-check: setup flink-venv jars-flink ## the bench's plumbing: every phase at toy sizes, the report's schema (~15 min)
	$(PYTHON) -m pytest -m bench $(PYTEST_ARGS)

test-fast: setup ## the inner loop: every unit test that is not slow (no server, no subprocess; budget 5 min)
	$(PYTHON) -m pytest $(XDIST) -m 'unit and not slow' $(PYTEST_ARGS)

test-unit: setup ## all the unit tests, the slow ones included (no server, no subprocess)
	$(PYTHON) -m pytest -m unit $(PYTEST_ARGS)

lint: venv ## ruff check and format check; no measured time in a comment or docstring (infra/lint_figures.py)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PYTHON) -m infra.lint_figures

fmt: venv ## format and fix with ruff
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

kafka-start: setup ## start the local broker (KRaft, port from conf or EO_KAFKA_BOOTSTRAP)
	$(PYTHON) -m infra.kafka start
kafka-stop: venv ## stop the local broker
	$(PYTHON) -m infra.kafka stop
kafka-status: venv ## is the broker up (STATUS_ARGS=--json for JSON, --check: exit 3 when down)
	$(PYTHON) -m infra.kafka status $(STATUS_ARGS)

airflow: setup ## start Airflow (UI, scheduler, DAG processor, triggerer) and print the login
	$(PYTHON) -m infra.airflow start
airflow-stop: venv ## stop Airflow
	$(PYTHON) -m infra.airflow stop
airflow-cli: venv ## any Airflow command on this project's Airflow and its PostgreSQL metadata: make airflow-cli ARGS="dags list"
	$(PYTHON) -m infra.airflow cli -- $(ARGS)
airflow-status: venv ## is Airflow up, component by component (STATUS_ARGS=--json, --check: exit 3 when down)
	$(PYTHON) -m infra.airflow status $(STATUS_ARGS)

stream-start: setup ## run the streaming job continuously in the background (needs Kafka)
	$(PYTHON) -m infra.streaming start
stream-standby: setup ## a warm standby driver that takes over within seconds if the job dies
	$(PYTHON) -m infra.streaming standby
stream-stop: venv ## stop the streaming job (and its standby)
	$(PYTHON) -m infra.streaming stop
stream-status: venv ## is it running; lag per partition; time since the last commit (STATUS_ARGS=--json, --check)
	$(PYTHON) -m infra.streaming status $(STATUS_ARGS)

quarantine: setup ## list, export or re-send quarantined records: make quarantine QUARANTINE_ARGS="list --reason 'bad_value:*'"
	$(PYTHON) -m ops.quarantine $(QUARANTINE_ARGS)

clean: ## remove generated data and reports (keeps the venv and jars)
	rm -rf data reports spark-warehouse build
