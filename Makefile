# ck-cgroup: build, test, demo, check, install, package.
#
#   make demo       the main job: a real demonstration on an isolated root (needs root, cgroup2)
#   make test       the tests, the live-service isolation check, the units
#   make mutation   the mutation controls (scripts/mutation-controls): each mechanism switched off
#                   in turn, and the tests guarding it must fail by name
#   make check      fmt, clippy -D warnings (the workspace, and the library without its systemd
#                   feature), rustdoc -D warnings (both ways too), the library's dependency tree (no clap, zbus,
#                   tokio: scripts/check-library), that an unchanged build compiles nothing
#                   (scripts/check-incremental), unit verification, and shellcheck
#                   over every shell script (scripts/shellcheck-all)
#   make install    the helper, the units, man pages, completions, docs; never runs cargo when
#                   the helper is built (CK_CGROUP_BIN=path installs another build)
#   make uninstall  remove what install put there (same variables)
#   make deb        the Debian packages in target/deb/ (scripts/build-deb)
#   make rpm        the RPM packages in target/rpm/ (scripts/build-rpm, packaging/rpm/)
#   make bench      the benchmarks (scripts/bench)
#   make vm-test    the guest lane (scripts/vm-test)
#   make vm-mutation the guest lane's mutation controls (scripts/vm-mutation)
#   make vm-bench   the guest bench on lane 2's image (scripts/vm-bench; not part of make test)
#
# docs/packaging.md describes every variable below and every line of the units.

CARGO ?= cargo
PKG_CONFIG ?= pkg-config
INSTALL ?= install
SED ?= sed

# The helper that ships: a static-pie built by scripts/build-helper, in target/HOST/release/
# (HOST: rustc's host triple; CK_STATIC=0 builds it dynamically linked, same path). Without
# rustc only a packager's CK_CGROUP_BIN can be installed; the fallback is never built.
RELEASE_BIN := $(or $(shell scripts/build-helper --path 2>/dev/null),target/release/ck-cgroup)
# The helper `make install` installs; nothing is built when it exists.
CK_CGROUP_BIN ?= $(RELEASE_BIN)

# Where things go. DESTDIR is prepended to each at install time and never appears in a file.
PREFIX ?= /usr/local
EXEC_PREFIX ?= $(PREFIX)
BINDIR ?= $(EXEC_PREFIX)/bin
LIBEXECDIR ?= $(EXEC_PREFIX)/libexec
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/ck-cgroup
# The helper's directory: BINDIR, because daemon authors and operators call it as `ck-cgroup`.
# HELPERDIR='$(LIBEXECDIR)/ck-cgroup' keeps it off PATH; the units follow either way.
HELPERDIR ?= $(BINDIR)
HELPER = $(HELPERDIR)/ck-cgroup
# The supervisor daemon, which is not built here: only its path goes into the unit.
DAEMON ?= $(BINDIR)/ck-subc

# pkg-config's answers for this PREFIX: with PREFIX=/usr the distribution's own directories
# (Debian 12: /lib/systemd/system), with any other prefix the same layout below that prefix
# (/usr/local/lib/systemd/system, which systemd also searches). Without pkg-config, the latter.
ifeq ($(PREFIX),/usr)
PC_DEFINES := --define-variable=prefix=$(PREFIX)
else
PC_DEFINES := --define-variable=prefix=$(PREFIX) --define-variable=root_prefix=$(PREFIX) \
	--define-variable=rootprefix=$(PREFIX)
endif
pc_var = $(shell $(PKG_CONFIG) $(PC_DEFINES) --variable=$(2) $(1) 2>/dev/null)

ifeq ($(origin SYSTEMDSYSTEMUNITDIR),undefined)
SYSTEMDSYSTEMUNITDIR := $(or $(call pc_var,systemd,systemdsystemunitdir),$(PREFIX)/lib/systemd/system)
endif
ifeq ($(origin SYSTEMDUSERUNITDIR),undefined)
SYSTEMDUSERUNITDIR := $(or $(call pc_var,systemd,systemduserunitdir),$(PREFIX)/lib/systemd/user)
endif
ifeq ($(origin BASHCOMPLETIONDIR),undefined)
BASHCOMPLETIONDIR := $(or $(call pc_var,bash-completion,completionsdir),$(DATADIR)/bash-completion/completions)
endif
# zsh's own default for its prefix; Debian's zsh reads /usr/share/zsh/vendor-completions instead
# (scripts/build-deb passes that).
ZSHCOMPLETIONDIR ?= $(DATADIR)/zsh/site-functions
ifeq ($(origin FISHCOMPLETIONDIR),undefined)
FISHCOMPLETIONDIR := $(or $(call pc_var,fish,completionsdir),$(DATADIR)/fish/vendor_completions.d)
endif

# DelegateSubgroup= needs systemd 254; older systemd warns about the unknown key, so the line is
# written only for the systemd found here (or DELEGATE_SUBGROUP=yes|no).
ifeq ($(origin SYSTEMD_VERSION),undefined)
SYSTEMD_VERSION := $(shell { $(PKG_CONFIG) --modversion systemd || systemctl --version | \
	$(SED) -n '1s/^systemd //p'; } 2>/dev/null | $(SED) -n '1{s/[^0-9].*//;p;}')
endif
ifeq ($(origin DELEGATE_SUBGROUP),undefined)
DELEGATE_SUBGROUP := $(shell [ "0$(SYSTEMD_VERSION)" -ge 254 ] 2>/dev/null && echo yes || echo no)
endif
ifeq ($(DELEGATE_SUBGROUP),yes)
DELEGATE_SUBGROUP_LINE := DelegateSubgroup=daemon
else
DELEGATE_SUBGROUP_LINE := \#DelegateSubgroup=daemon (off: rendered for systemd $(or $(SYSTEMD_VERSION),unknown), before 254)
endif

# The Prometheus rules (packaging/prometheus: alerts and recording rules, and their promtool
# tests), for prometheus.yml's rule_files.
PROMRULESDIR ?= $(DATADIR)/ck-cgroup/prometheus

DOCS := README.md docs/design.md docs/packaging.md docs/daemon-integration.md docs/operations.md \
	docs/commands.md docs/json.md
MAN1 = $(DESTDIR)$(MANDIR)/man1

# The node exporter's textfile collector directory ck-cgroup-metrics.service writes ck-subc.prom
# into: Debian's prometheus-node-exporter reads /var/lib/prometheus/node-exporter; for the user
# manager, which has no standard one, the same path under the user's state directory (%S).
TEXTFILE_DIR ?= /var/lib/prometheus/node-exporter
USER_TEXTFILE_DIR ?= %S/prometheus/node-exporter

# $(call render,TEMPLATE,system|user,OUTPUT): fill a unit template for one service manager.
# Lines starting @SYSTEM@ are the system manager's only (sandboxing the user manager cannot do
# without a user namespace).
render = $(SED) \
	-e 's|@HELPER@|$(HELPER)|g' \
	-e 's|@TEXTFILE@|$(if $(filter user,$(2)),$(USER_TEXTFILE_DIR),$(TEXTFILE_DIR))|g' \
	-e 's|@USER@|$(if $(filter user,$(2)),--user ,)|g' \
	-e '$(if $(filter user,$(2)),/^@SYSTEM@/d,s|^@SYSTEM@||)' \
	-e 's|@DAEMON@|$(DAEMON)|g' \
	-e 's|@MANAGER@|$(2)|g' \
	-e 's|@SYSTEMCTL@|$(if $(filter user,$(2)),systemctl --user,systemctl)|g' \
	-e 's|@WANTEDBY@|$(if $(filter user,$(2)),default.target,multi-user.target)|g' \
	-e 's|^@DELEGATE_SUBGROUP@$$|$(DELEGATE_SUBGROUP_LINE)|' \
	$(1) > $(3).tmp && chmod 0644 $(3).tmp && mv $(3).tmp $(3)
# $(call install_units,system|user,DIR): every unit for one service manager into DIR.
install_units = $(call render,units/ck-subc.service.in,$(1),"$(2)/ck-subc.service") && \
	$(call render,units/module.slice.in,$(1),"$(2)/module.slice") && \
	$(call render,units/module-.slice.d/ck-cgroup.conf.in,$(1),"$(2)/module-.slice.d/ck-cgroup.conf") && \
	$(call render,units/ck-cgroup-metrics.service.in,$(1),"$(2)/ck-cgroup-metrics.service") && \
	$(call render,units/ck-cgroup-metrics.timer.in,$(1),"$(2)/ck-cgroup-metrics.timer")

.PHONY: all build test mutation demo check clean install uninstall bench deb rpm vm-test vm-mutation vm-bench fuzz

all: build

build:
	CARGO=$(CARGO) scripts/build-helper > /dev/null

# Built only when missing: install itself never runs cargo for an existing helper.
$(RELEASE_BIN):
	CARGO=$(CARGO) scripts/build-helper > /dev/null

test:
	scripts/test

mutation:
	scripts/mutation-controls

demo: build
	CK=$(RELEASE_BIN) scripts/demo

check:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings
	$(CARGO) clippy -p ck-cgroup --all-targets --locked -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --locked
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --locked -p ck-cgroup
	scripts/check-library
	scripts/check-incremental
	scripts/verify-units
	scripts/shellcheck-all

clean:
	$(CARGO) clean

install: $(filter $(RELEASE_BIN),$(CK_CGROUP_BIN))
	@test -x "$(CK_CGROUP_BIN)" || { echo "make install: $(CK_CGROUP_BIN) is not an executable: run make first, or pass CK_CGROUP_BIN=path" >&2; exit 1; }
	$(INSTALL) -d "$(DESTDIR)$(HELPERDIR)" "$(MAN1)" "$(DESTDIR)$(DOCDIR)/examples" \
		"$(DESTDIR)$(BASHCOMPLETIONDIR)" "$(DESTDIR)$(ZSHCOMPLETIONDIR)" "$(DESTDIR)$(FISHCOMPLETIONDIR)" \
		"$(DESTDIR)$(SYSTEMDSYSTEMUNITDIR)/module-.slice.d" "$(DESTDIR)$(SYSTEMDUSERUNITDIR)/module-.slice.d" \
		"$(DESTDIR)$(PROMRULESDIR)"
	$(INSTALL) -m 0755 "$(CK_CGROUP_BIN)" "$(DESTDIR)$(HELPER)"
	"$(CK_CGROUP_BIN)" generate man --out-dir "$(MAN1)"
	chmod 0644 "$(MAN1)"/ck-cgroup.1 "$(MAN1)"/ck-cgroup-*.1
	"$(CK_CGROUP_BIN)" generate bash > "$(DESTDIR)$(BASHCOMPLETIONDIR)/ck-cgroup"
	"$(CK_CGROUP_BIN)" generate zsh > "$(DESTDIR)$(ZSHCOMPLETIONDIR)/_ck-cgroup"
	"$(CK_CGROUP_BIN)" generate fish > "$(DESTDIR)$(FISHCOMPLETIONDIR)/ck-cgroup.fish"
	chmod 0644 "$(DESTDIR)$(BASHCOMPLETIONDIR)/ck-cgroup" "$(DESTDIR)$(ZSHCOMPLETIONDIR)/_ck-cgroup" \
		"$(DESTDIR)$(FISHCOMPLETIONDIR)/ck-cgroup.fish"
	$(call install_units,system,$(DESTDIR)$(SYSTEMDSYSTEMUNITDIR))
	$(call install_units,user,$(DESTDIR)$(SYSTEMDUSERUNITDIR))
	$(INSTALL) -m 0644 $(DOCS) "$(DESTDIR)$(DOCDIR)/"
	$(INSTALL) -m 0644 packaging/policy.toml.example "$(DESTDIR)$(DOCDIR)/examples/policy.toml.example"
	$(INSTALL) -m 0644 packaging/prometheus/ck-cgroup.rules.yml packaging/prometheus/ck-cgroup.rules.test.yml \
		"$(DESTDIR)$(PROMRULESDIR)/"

uninstall:
	rm -f "$(DESTDIR)$(HELPER)" "$(MAN1)"/ck-cgroup.1 "$(MAN1)"/ck-cgroup-*.1 \
		"$(DESTDIR)$(BASHCOMPLETIONDIR)/ck-cgroup" "$(DESTDIR)$(ZSHCOMPLETIONDIR)/_ck-cgroup" \
		"$(DESTDIR)$(FISHCOMPLETIONDIR)/ck-cgroup.fish" \
		$(foreach d,$(SYSTEMDSYSTEMUNITDIR) $(SYSTEMDUSERUNITDIR),"$(DESTDIR)$(d)/ck-subc.service" \
			"$(DESTDIR)$(d)/module.slice" "$(DESTDIR)$(d)/module-.slice.d/ck-cgroup.conf" \
			"$(DESTDIR)$(d)/ck-cgroup-metrics.service" "$(DESTDIR)$(d)/ck-cgroup-metrics.timer") \
		$(foreach f,$(notdir $(DOCS)),"$(DESTDIR)$(DOCDIR)/$(f)") \
		"$(DESTDIR)$(DOCDIR)/examples/policy.toml.example" \
		"$(DESTDIR)$(PROMRULESDIR)/ck-cgroup.rules.yml" "$(DESTDIR)$(PROMRULESDIR)/ck-cgroup.rules.test.yml"
	rmdir "$(DESTDIR)$(SYSTEMDSYSTEMUNITDIR)/module-.slice.d" "$(DESTDIR)$(SYSTEMDUSERUNITDIR)/module-.slice.d" \
		"$(DESTDIR)$(DOCDIR)/examples" "$(DESTDIR)$(DOCDIR)" "$(DESTDIR)$(PROMRULESDIR)" \
		"$(DESTDIR)$(dir $(PROMRULESDIR:/=))" 2>/dev/null || true

bench:
	scripts/bench

deb: build
	scripts/build-deb

rpm: build
	scripts/build-rpm

vm-test:
	scripts/vm-test

vm-mutation:
	scripts/vm-mutation

vm-bench:
	scripts/vm-bench

fuzz:
	scripts/fuzz
