# Entry points. `make demo` runs the whole system locally; `make test` runs every test.
SHELL := /bin/bash
PYTHON312 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12))
PY := .venv/bin/python
GO ?= $(firstword $(shell command -v go) /usr/local/go/bin/go)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 1

.PHONY: setup demo test fast unit e2e up down lint synth debian-packages deploy destroy

setup: debian-packages .venv/.installed client/native/hycloud-fused

# `hycloud mount --native`'s daemon (Go, go-fuse), beside the client that starts it
# go-fuse has no FUSE over io_uring: _go-fuse/ adds it to go-fuse's package in vendor/
client/native/hycloud-fused: client/native/go.mod client/native/go.sum $(wildcard client/native/*.go) \
		client/native/_go-fuse/fuse/uring_linux.go
	cd client/native && rm -rf vendor && $(GO) mod vendor \
		&& cp _go-fuse/fuse/uring_linux.go vendor/github.com/hanwen/go-fuse/v2/fuse/ \
		&& $(GO) build -mod=vendor -trimpath -o hycloud-fused .

debian-packages:  # system packages the tests need (litmus, fuse3), when missing
	@infra/local/debian_packages.sh

.venv/.installed: requirements.txt layers/core/pyproject.toml layers/core/setup.py layers/core/hycloud_core/delta/native.c client/pyproject.toml
	test -x $(PY) || $(PYTHON312) -m venv .venv
	$(PY) -m pip install --quiet --disable-pip-version-check uv  # parallel downloads: a minute, not three
	.venv/bin/uv pip install --quiet --python $(PY) -r requirements.txt -e layers/core -e client
	touch $@

demo: setup
	$(PY) infra/local/demo.py

# The local cloud's install (LocalStack, DynamoDB Local, the function runtime, the CDK CLI: standard
# library only) runs beside the project's, its output shown when both are done.
test:
	@set -e; t0=$$(date +%s); log=$$(mktemp); \
	$(PYTHON312) infra/local/localcloud.py install > $$log 2>&1 & installing=$$!; \
	$(MAKE) --no-print-directory setup || { kill $$installing; cat $$log; exit 1; }; t1=$$(date +%s); \
	wait $$installing || { cat $$log; exit 1; }; cat $$log; rm -f $$log; t2=$$(date +%s); \
	set +e; $(PY) infra/local/run_tests.py --durations=20; rc=$$?; t3=$$(date +%s); \
	echo "phases: project install $$((t1-t0)) s, local cloud install (beside it) done at $$((t2-t0)) s, tests (start, deploy, run) $$((t3-t2)) s"; \
	exit $$rc

fast: setup  # daily work: the quick cloud-free tests and the end-to-end smoke set (make test runs them all)
	$(PY) infra/local/localcloud.py install
	$(PY) infra/local/run_tests.py --fast

unit: setup
	$(PY) -m pytest tests/unit tests/infra

up: setup
	$(PY) infra/local/deploy.py

down:
	$(PY) infra/local/localcloud.py stop

lint: setup  # style, the layers of docs/ARCHITECTURE.md (.importlinter) and types ([tool.mypy]); tests/unit/test_layers.py and test_types.py in make test
	.venv/bin/ruff check .
	.venv/bin/lint-imports
	.venv/bin/mypy

synth: setup
	PATH=$(CURDIR)/.venv/bin:$$PATH .localcloud/node/node_modules/.bin/cdk synth --quiet

deploy: setup  # into the AWS account of your credentials (or the local cloud with AWS_ENDPOINT_URL set)
	$(PY) infra/local/localcloud.py install-cdk
	CDK_CONTEXT='$(CDK_CONTEXT)' $(PY) infra/account.py deploy $(if $(USER_NAME),--user $(USER_NAME))

destroy: setup  # removes the stacks; lists what they retain (your data) and how to delete it
	$(PY) infra/local/localcloud.py install-cdk
	CDK_CONTEXT='$(CDK_CONTEXT)' $(PY) infra/account.py destroy
