# ck-cgroup: build, test, demo, check, install.
#
#   make demo    the main job: a real demonstration on an isolated root (needs root, cgroup2)
#   make test    the tests, the live-service isolation check and the mutation controls
#   make check   fmt, clippy -D warnings, rustdoc

CARGO ?= cargo
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
RELEASE_BIN := target/release/ck-cgroup

.PHONY: all build test demo check clean

all: build

build:
	$(CARGO) build --release --locked

test:
	scripts/test

demo: build
	CK=$(RELEASE_BIN) scripts/demo

check:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --locked

clean:
	$(CARGO) clean
