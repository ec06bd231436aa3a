# perf-persistent: GNU make, C++20, pkg-config for libraries.
#
#   make              build $(BUILD)/perf-persistent
#   make test         build and run every test (unit, command line, real kernel)
#   make check-root   only the real-kernel tests (root or CAP_PERFMON)
#   make asan         unit and command-line tests under ASan + UBSan (clang,
#                     in $(BUILD)/san)
#   make fuzz         each libFuzzer target for FUZZ_SECONDS (the same tree)
#   make doc          man pages from Documentation/perf-persistent*.txt
#   make lint         clang-format check and clang-tidy
#   make layers       check every #include against the allowed module graph
#   make install      binary into perf's exec path, man pages under the man path,
#                     the systemd units, /etc/perf-persistent.conf, bash completion
#   make uninstall    remove what install installed (an edited config stays)
#   make deb          the Debian package into $(BUILD)/deb/ (dpkg-buildpackage)
#   make check-completion  the bash completion against the built program
#   make ci           everything CI runs, as steps side by side under -j (each
#                     logged to $(BUILD)/ci/, timed): layers, the -O2 build
#                     with warnings as errors, check-binary, lint, doc,
#                     check-completion, the sanitizer build, asan, fuzz,
#                     check-mce, check-pstore, check-previous-boot,
#                     check-systemd (with deb),
#                     bench-smoke, check-root (each tree compiled once per
#                     configuration, the unit tests run once, under the
#                     sanitizers)
#   make bench        benchmarks against perf itself (by hand; not in ci)
#   make bench-smoke  the short form of every benchmark (in ci: a benchmark
#                     that breaks is seen; measures nothing, asserts no time)
#   make check-mce    a real MCE under QEMU, end to end (downloads a Debian kernel
#                     into /var/cache/perf-persistent/qemu, QEMU_CACHE, once)
#   make check-pstore a fatal MCE that resets a QEMU guest, harvested from ERST by watch,
#                     and a PCIe AER error read live in the second boot
#   make check-previous-boot  the previous boot's trace buffer across a crash
#                     (Debian 12's 6.12 kernel, downloaded once into the same cache)
#   make check-systemd  the package under Debian's systemd in a QEMU guest: boot,
#                     restarts that keep samples, removal (builds a Debian rootfs
#                     into the same cache, once)
#   V=1               show full commands
#
# Sources are found by directory: every <module>/*.cpp is library code (one
# archive per module), <module>/testing/*.cpp test-only library code,
# *_test.cpp a unit test, *_fuzzer.cpp a fuzz target, cmd/*.cpp the program.
# Documentation/architecture.txt describes the modules and their graph.

BUILD ?= build
CXX ?= g++
CLANGXX ?= clang++
FUZZ_SECONDS ?= 12
GTEST_ARGS ?= --gtest_brief=1
PREFIX ?= /usr/local
PERF ?= perf
DESTDIR ?=

ifeq ($(V),1)
Q :=
quiet = @true
else
Q := @
quiet = @printf '  %-6s %s\n'
endif

# The modules, each a static library, listed so that each comes after every
# module it depends on (the link order is this list reversed). DEPS_<module>
# is the one place that says which modules a module may use: `make layers`
# (scripts/check-layers) fails on an #include across any other edge, and
# Documentation/architecture.txt draws the graph. cmd/ (the program) may use
# every module; tests/unit, tests/kernel and bench/ anything.
MODULES := base sys pmu parse mce ftrace filter report persistent broker check record top watch
DEPS_base :=
DEPS_sys := base
DEPS_pmu := base sys
DEPS_parse := base sys pmu
DEPS_mce := base
DEPS_ftrace := base
DEPS_filter := base mce
DEPS_report := base sys mce
DEPS_persistent := base sys pmu parse
DEPS_broker := base sys pmu parse ftrace persistent
DEPS_check := base sys pmu parse mce ftrace persistent
DEPS_record := base sys pmu parse mce ftrace report persistent
DEPS_top := base sys pmu parse mce ftrace filter report persistent record
DEPS_watch := base sys pmu parse mce ftrace filter report persistent record
# Test-only libraries, never linked into the program: <module>/testing/ holds
# a module's test doubles (the fake kernel, ...) and may use the module, its
# DEPS and their testing/ folders; tests/support/ holds helpers every test
# shares (temp dirs, fake sysfs trees, running the program).
TESTING := $(foreach m,$(MODULES),$(if $(wildcard $(m)/testing/*),$(m)/testing))
DEPS_tests/support := base sys pmu report
# Temporary exceptions to the graph, FILE:MODULE (make layers says when one
# is no longer needed): none today.
LAYERS_EXCEPTIONS :=
PKGS := libtraceevent libelf nlohmann_json ncursesw readline libsystemd sqlite3
FEATURES := broker-backend kernel-backend(seed-v3-abi) systemd(notify,fdstore)

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
GTEST_CFLAGS := $(shell pkg-config --cflags gtest gmock 2>/dev/null)
GTEST_LIBS := $(shell pkg-config --libs gmock gtest_main 2>/dev/null)

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wnon-virtual-dtor -Wformat=2 -Wvla \
	-Wimplicit-fallthrough -Wmissing-declarations
CPPFLAGS_ALL := -I. -I$(BUILD)/gen $(PKG_CFLAGS) -D_GNU_SOURCE
CXXSTD := -std=c++20
OPTFLAGS ?= -O2 -g
CXXFLAGS_ALL = $(CXXSTD) $(OPTFLAGS) $(WARNINGS) $(CPPFLAGS_ALL) -MMD -MP $(CXXFLAGS)
LDLIBS_ALL = $(PKG_LIBS) -lpthread $(LDLIBS)
# The program carries its own C++ runtime: it starts in half the time (no
# libstdc++ symbol binding; `list` is run by scripts in loops) and runs on a
# host whose libstdc++ differs. Sanitizer builds keep the shared one.
BIN_LDFLAGS ?= -static-libstdc++ -static-libgcc

not_lib := %_test.cpp %_fuzzer.cpp %_benchmark.cpp
# A library's sources: its folder's *.cpp that are not tests, fuzzers or
# benchmarks (<module>/testing/ is a library of its own).
lib_srcs = $(filter-out $(not_lib),$(wildcard $(1)/*.cpp))
lib_file = $(BUILD)/lib/libpp_$(subst /,_,$(1)).a
reverse = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))

LIBRARIES := $(MODULES) $(TESTING) tests/support
LIB_SRCS := $(foreach l,$(MODULES),$(call lib_srcs,$(l)))
TESTING_SRCS := $(foreach l,$(TESTING) tests/support,$(call lib_srcs,$(l)))
CMD_SRCS := $(filter-out $(not_lib),$(wildcard cmd/*.cpp))
UNIT_SRCS := $(wildcard $(addsuffix /*_test.cpp,$(MODULES) $(TESTING) cmd) tests/unit/*.cpp)
KERNEL_SRCS := $(wildcard tests/kernel/*.cpp)
FUZZ_SRCS := $(wildcard $(addsuffix /*_fuzzer.cpp,$(MODULES)))
BENCH_SRCS := $(wildcard bench/*.cpp)
# Man pages only: Documentation/architecture.txt and protocol.txt are notes.
DOC_SRCS := $(filter-out Documentation/%-common.txt,$(wildcard Documentation/perf-persistent*.txt))

obj = $(patsubst %.cpp,$(1)/obj/%.o,$(2))

BIN := $(BUILD)/perf-persistent
UNIT := $(BUILD)/unit_tests
KERNEL := $(BUILD)/kernel_tests
BUILD_INFO := $(BUILD)/gen/build_info.h

# Link order: users before what they use. The program links the modules
# only; the tests link the test-only libraries first.
PROGRAM_LIBS := $(foreach l,$(call reverse,$(MODULES)),$(call lib_file,$(l)))
TEST_LIBS := $(call lib_file,tests/support) \
	$(foreach l,$(call reverse,$(TESTING)),$(call lib_file,$(l))) $(PROGRAM_LIBS)

LIB_OBJS := $(call obj,$(BUILD),$(LIB_SRCS))
CMD_OBJS := $(call obj,$(BUILD),$(CMD_SRCS))
UNIT_OBJS := $(call obj,$(BUILD),$(UNIT_SRCS))
KERNEL_OBJS := $(call obj,$(BUILD),$(KERNEL_SRCS))
ALL_OBJS := $(LIB_OBJS) $(call obj,$(BUILD),$(TESTING_SRCS)) $(CMD_OBJS) $(UNIT_OBJS) \
	$(KERNEL_OBJS)

.PHONY: all libs print-libs layers check-binary test unit check-root asan fuzz fuzz-build fuzz-bins fuzz-run doc \
	lint format install uninstall deb ci bench bench-smoke check-mce check-pstore check-previous-boot check-systemd check-completion clean setup FORCE
.DELETE_ON_ERROR:

all: $(BIN)

# Missing libraries are a setup problem: say which script fixes it.
ifeq ($(filter-out clean setup layers print-libs,$(MAKECMDGOALS)),)
ifneq ($(MAKECMDGOALS),)
NO_PKG_CHECK := yes
endif
endif
ifneq ($(NO_PKG_CHECK),yes)
ifeq ($(shell pkg-config --exists $(PKGS) && echo yes),)
$(error missing development packages ($(PKGS)); run ./scripts/setup as root)
endif
endif
# The tests need more than the program: ./scripts/setup --test installs it.
ifneq ($(filter test unit check-root asan ci $(UNIT) $(KERNEL),$(MAKECMDGOALS)),)
ifeq ($(shell pkg-config --exists gtest gmock && echo yes),)
$(error missing GoogleTest (gtest, gmock); run ./scripts/setup --test as root)
endif
endif

$(BUILD_INFO): FORCE
	@mkdir -p $(dir $@)
	$(Q)scripts/build-info $@ '$(CXX)' '$(FEATURES)'

$(BUILD)/obj/%.o: %.cpp | $(BUILD_INFO)
	@mkdir -p $(dir $@)
	$(quiet) CXX $<
	$(Q)$(CXX) $(CXXFLAGS_ALL) $(GTEST_CFLAGS) -c $< -o $@

$(BUILD)/obj/cmd/version.o: $(BUILD_INFO)

# One archive per library: $(BUILD)/lib/libpp_<module>.a, libpp_sys_testing.a...
$(foreach l,$(LIBRARIES),$(eval $(call lib_file,$(l)): $(call obj,$(BUILD),$(call lib_srcs,$(l)))))

$(BUILD)/lib/%.a:
	@mkdir -p $(dir $@)
	$(quiet) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

libs: $(PROGRAM_LIBS)

# The archives the program links, in link order (for bench/*.bench).
print-libs:
	@echo $(PROGRAM_LIBS)

$(BIN): $(CMD_OBJS) $(PROGRAM_LIBS)
	$(quiet) LINK $@
	$(Q)$(CXX) $(CXXFLAGS_ALL) $(BIN_LDFLAGS) -o $@ $(CMD_OBJS) $(PROGRAM_LIBS) $(LDLIBS_ALL)

$(UNIT): $(UNIT_OBJS) $(TEST_LIBS)
	$(quiet) LINK $@
	$(Q)$(CXX) $(CXXFLAGS_ALL) -o $@ $(UNIT_OBJS) $(TEST_LIBS) $(GTEST_LIBS) $(LDLIBS_ALL)

$(KERNEL): $(KERNEL_OBJS) $(TEST_LIBS)
	$(quiet) LINK $@
	$(Q)$(CXX) $(CXXFLAGS_ALL) -o $@ $(KERNEL_OBJS) $(TEST_LIBS) $(GTEST_LIBS) $(LDLIBS_ALL)

# The include graph against DEPS_* above: fails naming file:line and the edge.
LAYERS_GRAPH = $(foreach l,$(MODULES) tests/support,'$(l): $(DEPS_$(l))') 'cmd: $(MODULES)' \
	$(foreach e,$(LAYERS_EXCEPTIONS),'except $(e)')

layers:
	$(quiet) LAYERS "(scripts/check-layers)"
	$(Q)printf '%s\n' $(LAYERS_GRAPH) | scripts/check-layers

# The shipped program holds no test double (scripts/check-binary): no symbol
# in a testing namespace, none named fake, and none that a test-only archive
# (<module>/testing/, tests/support/) defines.
TEST_ONLY_LIBS := $(foreach l,$(TESTING) tests/support,$(call lib_file,$(l)))

check-binary: $(BIN) $(TEST_ONLY_LIBS)
	$(quiet) CHECK "no test doubles in $(BIN)"
	$(Q)scripts/check-binary $(BIN) $(TEST_ONLY_LIBS)

# The tests find the program, the sources and the build tree through the environment.
TEST_ENV = PP_BINARY=$(abspath $(BIN)) PP_SOURCE_DIR=$(CURDIR) PP_BUILD_DIR=$(abspath $(BUILD))

RUN_UNIT = $(TEST_ENV) $(UNIT) $(GTEST_ARGS)
RUN_KERNEL = $(TEST_ENV) tests/kernel/run $(KERNEL) $(GTEST_ARGS)

unit: $(UNIT) $(BIN)
	$(quiet) TEST "unit and command-line tests"
	$(Q)$(RUN_UNIT)

check-root: $(KERNEL) $(BIN)
	$(quiet) TEST "real-kernel tests"
	$(Q)$(RUN_KERNEL)

# One after the other, so their reports do not interleave under -j.
test: $(UNIT) $(KERNEL) $(BIN)
	$(quiet) TEST "unit and command-line tests"
	$(Q)$(RUN_UNIT)
	$(quiet) TEST "real-kernel tests"
	$(Q)$(RUN_KERNEL)

# The sanitizer tree, $(BUILD)/san: clang with ASan + UBSan and libFuzzer's
# coverage instrumentation (-fsanitize=fuzzer-no-link), so one compile of the
# libraries serves both the unit tests (make asan) and the fuzz targets (make
# fuzz). libFuzzer's main is linked into the fuzzers only; the unit tests and
# the program of this tree run on the sanitizer runtime's weak defaults for
# the coverage callbacks. The command-line tests of `make asan` run this
# tree's program (PP_BINARY), so it runs under the sanitizers too.
# The unit tests' own objects are compiled at -O0 there: the code under
# test is the libraries' (at -O1, as the fuzzers need it), clang's warnings
# do not depend on the optimisation level, and a test file compiles in
# about 60 % of the time. (UNIT_OPTFLAGS, when set, are the OPTFLAGS of the
# unit tests' objects.)
SAN_BUILD = $(BUILD)/san
SAN_FLAGS := -O1 -g -fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
SAN_MAKE = $(MAKE) --no-print-directory BUILD=$(SAN_BUILD) CXX='$(CLANGXX)' \
	OPTFLAGS='$(SAN_FLAGS)' UNIT_OPTFLAGS='$(subst -O1,-O0,$(SAN_FLAGS))' BIN_LDFLAGS= \
	FEATURES='$(FEATURES) asan ubsan'
ifneq ($(UNIT_OPTFLAGS),)
$(UNIT_OBJS): override OPTFLAGS = $(UNIT_OPTFLAGS)
endif

asan:
	+$(Q)$(SAN_MAKE) unit

# The libFuzzer targets, linked in the tree they are built in (make fuzz
# builds them in $(SAN_BUILD)): the target's object, libFuzzer's main
# (-fsanitize=fuzzer) and the module archives.
FUZZ_BINS := $(patsubst %_fuzzer.cpp,$(BUILD)/fuzz/%_fuzzer,$(FUZZ_SRCS))
FUZZ_OBJS := $(call obj,$(BUILD),$(FUZZ_SRCS))
# Kept between runs: make would delete these intermediates after each link.
.SECONDARY: $(FUZZ_OBJS)

$(BUILD)/fuzz/%_fuzzer: $(BUILD)/obj/%_fuzzer.o $(PROGRAM_LIBS)
	@mkdir -p $(dir $@)
	$(quiet) LINK $@
	$(Q)$(CXX) $(CXXFLAGS_ALL) -fsanitize=fuzzer -o $@ $< $(PROGRAM_LIBS) $(LDLIBS_ALL)

fuzz-bins: $(FUZZ_BINS)

# Each target runs FUZZ_SECONDS from its checked-in seed corpus,
# tests/fuzz/corpus/<target>/, copied to scratch so the tree stays clean.
fuzz-run: $(FUZZ_BINS)
	$(Q)tests/fuzz/run $(FUZZ_SECONDS) $(BUILD)/fuzz $(FUZZ_BINS)

fuzz-build:
	+$(Q)$(SAN_MAKE) fuzz-bins

fuzz:
	+$(Q)$(SAN_MAKE) fuzz-run

# Man pages (asciidoctor, manpage backend).
MAN_PAGES := $(patsubst Documentation/%.txt,$(BUILD)/doc/%.1,$(DOC_SRCS))

$(BUILD)/doc/%.1: Documentation/%.txt $(wildcard Documentation/*-common.txt)
	@mkdir -p $(dir $@)
	$(quiet) DOC $@
	$(Q)asciidoctor --failure-level=WARN -b manpage -d manpage -a mansource=perf-persistent \
		-a manversion=$(shell cat VERSION) -o $@ $<

doc: $(MAN_PAGES)

# Every folder that holds sources: clang-format checks all of them, and
# lint fails on a .cpp or .h anywhere else (a new folder must be added here).
LINT_DIRS := $(LIBRARIES) cmd tests/unit tests/kernel bench
LINT_SRCS = $(wildcard $(addsuffix /*.cpp,$(LINT_DIRS)) $(addsuffix /*.h,$(LINT_DIRS)))
# clang-tidy reads every library (each module, its testing/ folder,
# tests/support/) and the program's sources, and through them the headers
# .clang-tidy's HeaderFilterRegex names; a header with no .cpp of its own
# beside it (header-only test doubles, tables) is read on its own, as C++.
TIDY_SRCS = $(foreach l,$(LIBRARIES),$(call lib_srcs,$(l))) $(CMD_SRCS)
TIDY_HEADERS = $(foreach h,$(wildcard $(addsuffix /*.h,$(LIBRARIES) cmd)),\
	$(if $(wildcard $(h:.h=.cpp)),,$(h)))
# TIDY_CACHE: a folder where scripts/tidy-cached remembers the files that
# passed (make ci keeps it outside the clone); empty, every file is checked.
TIDY_CACHE ?=
TIDY = xargs -P $(shell nproc) -n 8 sh -c 'scripts/tidy-cached "$(TIDY_CACHE)" $(1) "$$@" -- \
	$(CXXSTD) $(CPPFLAGS_ALL) $(GTEST_CFLAGS)' tidy-cached

lint: | $(BUILD_INFO)
	$(quiet) LINT "every source is in a linted folder"
	$(Q)printf '%s\n' $(LINT_SRCS) | LC_ALL=C sort >$(BUILD)/lint-srcs
	$(Q)missing=$$(find . \( -path ./$(BUILD) -o -path ./.git \) -prune -o \
		\( -name '*.cpp' -o -name '*.h' \) -print | sed 's|^\./||' | LC_ALL=C sort | \
		LC_ALL=C comm -23 - $(BUILD)/lint-srcs); \
		if [ -n "$$missing" ]; then \
			echo "lint: never linted, in no folder of LINT_DIRS (Makefile):" $$missing >&2; exit 1; fi
	$(quiet) FORMAT "(clang-format --dry-run)"
	$(Q)clang-format --dry-run --Werror $(LINT_SRCS)
	$(quiet) TIDY "(clang-tidy)"
	$(Q)printf '%s\n' $(TIDY_SRCS) | $(call TIDY,)
	$(Q)printf '%s\n' $(TIDY_HEADERS) | $(call TIDY,-x c++ -Wno-pragma-once-outside-header)

format:
	clang-format -i $(LINT_SRCS)

EXEC_PATH = $(shell $(PERF) --exec-path 2>/dev/null || echo /usr/lib/perf-core)

# What install adds besides the program and the man pages: the units (their
# ExecStart naming the exec path the program went to), the default config
# file (only where none is, and left on uninstall when edited), the bash
# completion, and its hook that completes `perf persistent`, the alerting
# rules (share/doc/perf-persistent/perf-persistent-alerts.yml) (bash-completion
# reads /etc/bash_completion.d/ at start; perf's own completion is loaded
# later). The package (debian/rules) sets PREFIX=/usr and
# UNITDIR=/lib/systemd/system.
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
BASH_COMPLETION_DIR ?= $(PREFIX)/share/bash-completion/completions
UNITS := perf-persistent.service perf-persistent-keeper.service perf-persistent-watch.service
CONFIGS := perf-persistent.conf perf-persistent-watch.conf
PP_VERSION := $(shell cat VERSION)
# The program goes in stripped (the build keeps its debug info: ~100 MB),
# its debug info beside in the system's debug directory, where gdb finds it
# through the program's .gnu_debuglink: what the package's dh_strip does
# (its -dbgsym package). INSTALL_STRIP=no installs the program as built:
# the package does, and dh_strip strips it.
INSTALL_STRIP ?= yes
DEBUGDIR ?= /usr/lib/debug
OBJCOPY ?= objcopy
INSTALLED_DEBUG = $(DESTDIR)$(DEBUGDIR)$(EXEC_PATH)/perf-persistent.debug

install: $(BIN) doc
	install -D -m 0755 $(BIN) $(DESTDIR)$(EXEC_PATH)/perf-persistent
ifeq ($(INSTALL_STRIP),yes)
	install -d $(dir $(INSTALLED_DEBUG))
	$(OBJCOPY) --only-keep-debug $(BIN) $(INSTALLED_DEBUG)
	chmod 0644 $(INSTALLED_DEBUG)
	$(OBJCOPY) --strip-debug --strip-unneeded --add-gnu-debuglink=$(INSTALLED_DEBUG) \
		$(DESTDIR)$(EXEC_PATH)/perf-persistent
endif
	install -d $(DESTDIR)$(PREFIX)/bin
	ln -sf $(EXEC_PATH)/perf-persistent $(DESTDIR)$(PREFIX)/bin/perf-persistent
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	$(if $(MAN_PAGES),install -m 0644 $(MAN_PAGES) $(DESTDIR)$(PREFIX)/share/man/man1/)
	install -d $(DESTDIR)$(UNITDIR)
	for u in $(UNITS); do \
		sed 's|/usr/lib/perf-core/perf-persistent|$(EXEC_PATH)/perf-persistent|g' contrib/$$u \
			>$(DESTDIR)$(UNITDIR)/$$u && chmod 0644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; \
	done
	for c in $(CONFIGS); do \
		test -e $(DESTDIR)$(SYSCONFDIR)/$$c || \
			install -D -m 0644 contrib/$$c $(DESTDIR)$(SYSCONFDIR)/$$c || exit 1; \
	done
	install -D -m 0644 contrib/perf-persistent-alerts.yml \
		$(DESTDIR)$(PREFIX)/share/doc/perf-persistent/perf-persistent-alerts.yml
	install -D -m 0644 contrib/bash-completion/perf-persistent \
		$(DESTDIR)$(BASH_COMPLETION_DIR)/perf-persistent
	install -d $(DESTDIR)$(SYSCONFDIR)/bash_completion.d
	sed 's|/usr/share/bash-completion/completions/perf-persistent|$(BASH_COMPLETION_DIR)/perf-persistent|' \
		contrib/bash-completion/perf-persistent.perf-hook \
		>$(DESTDIR)$(SYSCONFDIR)/bash_completion.d/perf-persistent
	chmod 0644 $(DESTDIR)$(SYSCONFDIR)/bash_completion.d/perf-persistent
ifeq ($(DESTDIR),)
	@# A running systemd learns of the new units now: `create` asks it to
	@# start the broker where the unit is installed.
	@if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
	@echo "installed; to start the broker at boot: systemctl enable --now perf-persistent"
endif

uninstall:
	rm -f $(DESTDIR)$(EXEC_PATH)/perf-persistent $(DESTDIR)$(PREFIX)/bin/perf-persistent
	rm -f $(INSTALLED_DEBUG)
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/share/man/man1/,$(notdir $(MAN_PAGES)))
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS))
	rm -f $(DESTDIR)$(PREFIX)/share/doc/perf-persistent/perf-persistent-alerts.yml
	rm -f $(DESTDIR)$(BASH_COMPLETION_DIR)/perf-persistent $(DESTDIR)$(SYSCONFDIR)/bash_completion.d/perf-persistent
	for c in $(CONFIGS); do \
		if cmp -s contrib/$$c $(DESTDIR)$(SYSCONFDIR)/$$c; then \
			rm -f $(DESTDIR)$(SYSCONFDIR)/$$c; \
		elif [ -e $(DESTDIR)$(SYSCONFDIR)/$$c ]; then \
			echo "kept $(DESTDIR)$(SYSCONFDIR)/$$c (edited)"; \
		fi; \
	done
ifeq ($(DESTDIR),)
	@echo "uninstalled; if the units were enabled: systemctl disable --now perf-persistent perf-persistent-keeper perf-persistent-watch; systemctl daemon-reload"
endif

# The Debian package, from the tree as built (debian/rules runs `make all`,
# which rebuilds nothing when $(BUILD) is up to date, and never cleans it):
# the .deb and the rest of dpkg-buildpackage's output, which it writes next
# to the tree, are moved into $(BUILD)/deb/.
deb: $(BIN) doc
	$(quiet) DEB "$(BUILD)/deb/perf-persistent_$(PP_VERSION)_$(shell dpkg --print-architecture).deb"
	$(Q)rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb
	$(Q)dpkg-buildpackage -us -uc -b --post-clean $(if $(Q),>$(BUILD)/deb/build.log 2>&1 || { cat $(BUILD)/deb/build.log; exit 1; })
	$(Q)mv $(foreach e,deb ddeb buildinfo changes,../perf-persistent*_$(PP_VERSION)_*.$(e)) $(BUILD)/deb/ 2>/dev/null; \
		ls $(BUILD)/deb/*.deb >/dev/null

# make ci: every check CI runs, each a step (a ci-<step> target) that make
# runs beside another where the -j it was given allows (make -j2 ci: two at
# a time, a step's own compiles sharing the same two job slots). A step's
# output goes to $(CI_DIR)/<step>.log; the console shows when each step
# starts and ends and how long it took; a step that fails prints its log
# and fails ci; the end is a table of every step's start, end and duration.
# Each tree is compiled once per configuration: gcc -O2 with warnings as
# errors ($(BUILD): the program, the real-kernel tests, the benchmarks) and
# clang with the sanitizers ($(SAN_BUILD): the unit tests, run once, and the
# fuzz targets). The order below is the order make starts what is ready:
# the -O2 build first, then the longest step that needs it (the package and
# the systemd guest) beside the sanitizer build, the other checks as slots
# free, lint (clang-tidy, which keeps both cores busy by itself) last.
CI_DIR = $(BUILD)/ci
CI_STEP = scripts/ci-step $(CI_DIR)
CI_STEPS := layers build doc check-systemd san-build check-mce check-pstore check-previous-boot \
	check-binary \
	check-completion asan fuzz bench-smoke check-root lint
.PHONY: $(addprefix ci-,$(CI_STEPS))

# What a CI run keeps for the next on the same machine, outside the clone
# (a clean clone has no build/): the guest kernels and root file systems
# (tests/qemu/lib.sh), the compiler cache and the files clang-tidy passed.
# A change is compiled and checked again; what did not change is not.
CI_CACHE ?= /var/cache/perf-persistent
# ccache through its masquerade folder (Debian's /usr/lib/ccache: g++,
# clang++ ... that call ccache), so CXX stays one word for every script
# that runs it.
CI_CCACHE := $(wildcard /usr/lib/ccache/g++)
CI_ENV = QEMU_CACHE=$(CI_CACHE)/qemu CCACHE_DIR=$(CI_CACHE)/ccache CCACHE_BASEDIR=$(CURDIR) \
	CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=4G TIDY_CACHE=$(CI_CACHE)/clang-tidy \
	$(if $(CI_CCACHE),PATH=/usr/lib/ccache:$$PATH)

ci:
	$(Q)scripts/ci-step --start $(CI_DIR)
	$(Q)$(if $(CI_CCACHE),,echo 'ci: no ccache, every tree compiles from scratch (scripts/setup --test installs it)';)
	$(Q)env $(CI_ENV) $(MAKE) --no-print-directory $(addprefix ci-,$(CI_STEPS))
	$(Q)scripts/ci-step --summary $(CI_DIR)

ci-layers:
	$(Q)$(CI_STEP) layers $(MAKE) --no-print-directory layers
# The program, the real-kernel tests and every library the benchmarks link.
ci-build: ci-layers
	$(Q)$(CI_STEP) build $(MAKE) --no-print-directory $(BIN) $(KERNEL)
ci-doc:
	$(Q)$(CI_STEP) doc $(MAKE) --no-print-directory doc
# Builds the package (make deb) and boots it.
ci-check-systemd: ci-build ci-doc
	$(Q)$(CI_STEP) check-systemd $(MAKE) --no-print-directory check-systemd
ci-check-mce: ci-build
	$(Q)$(CI_STEP) check-mce $(MAKE) --no-print-directory check-mce
ci-check-pstore: ci-build
	$(Q)$(CI_STEP) check-pstore $(MAKE) --no-print-directory check-pstore
ci-check-previous-boot: ci-build
	$(Q)$(CI_STEP) check-previous-boot $(MAKE) --no-print-directory check-previous-boot
ci-check-binary: ci-build
	$(Q)$(CI_STEP) check-binary $(MAKE) --no-print-directory check-binary
ci-check-completion: ci-build
	$(Q)$(CI_STEP) check-completion $(MAKE) --no-print-directory check-completion
# The unit tests, the program they run and the fuzz targets, in $(SAN_BUILD);
# after the -O2 build, which then has both cores, so the steps that need it
# (the QEMU guests among them) start early, beside this one.
ci-san-build: ci-build
	+$(Q)$(CI_STEP) san-build $(SAN_MAKE) $(SAN_BUILD)/unit_tests $(SAN_BUILD)/perf-persistent fuzz-bins
ci-asan: ci-san-build
	$(Q)$(CI_STEP) asan $(MAKE) --no-print-directory asan
ci-fuzz: ci-san-build
	$(Q)$(CI_STEP) fuzz $(MAKE) --no-print-directory fuzz
ci-bench-smoke: ci-build
	$(Q)$(CI_STEP) bench-smoke $(MAKE) --no-print-directory bench-smoke
# After the benchmarks, not beside them: both load the real kernel's perf
# events, and the real-kernel tests count samples.
ci-check-root: ci-build ci-bench-smoke
	$(Q)$(CI_STEP) check-root $(MAKE) --no-print-directory check-root
ci-lint: ci-layers
	$(Q)$(CI_STEP) lint $(MAKE) --no-print-directory lint

bench: $(BIN)
	$(TEST_ENV) bench/run

bench-smoke: $(BIN)
	$(quiet) BENCH "every benchmark, short form"
	$(Q)$(TEST_ENV) BENCH_SMOKE=1 bench/run

# `perf-persistent <TAB>` and `perf persistent <TAB>` in a fresh bash with
# contrib/bash-completion/ installed as the package installs it.
check-completion: $(BIN)
	$(quiet) TEST "bash completion"
	$(Q)PP_BINARY=$(abspath $(BIN)) tests/completion-test

# A real machine check under QEMU, end to end (root; downloads a Debian
# kernel into /var/cache/perf-persistent/qemu/ on its first run, and again
# for a new version of the package): the product's first promise, so ci
# runs it. The QEMU tests keep their files apart in $(BUILD)/qemu/, so they
# can run side by side.
check-mce: $(BIN)
	$(quiet) TEST "a real machine check under QEMU"
	$(Q)PP_BINARY=$(abspath $(BIN)) tests/qemu/mce-test

# A machine check that crashed the guest, found after the reset in ERST (and
# its panic text in pstore) by watch --once and stored once, and an AER error
# on a virtio device read live (root; the kernel as check-mce downloads it).
check-pstore: $(BIN)
	$(quiet) TEST "a fatal machine check kept in ERST, and an AER error, under QEMU"
	$(Q)PP_BINARY=$(abspath $(BIN)) tests/qemu/pstore-test

# The black box across a crash (root; downloads Debian 12's 6.12 kernel
# into /var/cache/perf-persistent/qemu/ on its first run): boot 1's broker
# arms a boot-mapped ftrace instance, corrected machine checks and markers
# on both CPUs, then a fatal machine check that ramoops keeps in pstore;
# boot 2's broker keeps the buffer, record --previous-boot writes it and the
# real perf script reads it, watch stores the corrected machine checks once
# with origin previous-boot beside pstore's fatal one.
check-previous-boot: $(BIN)
	$(quiet) TEST "the previous boot's trace buffer across a crash, under QEMU"
	$(Q)PP_BINARY=$(abspath $(BIN)) tests/qemu/previous-boot-test

# The package as an ops team runs it (root; on its first run builds a Debian
# root file system with mmdebstrap into /var/cache/perf-persistent/qemu/,
# and downloads the kernel as check-mce does): dpkg -i in a guest whose PID 1 is Debian's
# systemd, the broker started at boot, samples and a machine check kept
# across systemctl restart and kill -9, dpkg -r, reinstall, purge.
check-systemd: deb
	$(quiet) TEST "the package under systemd in QEMU"
	$(Q)PP_DEB=$(abspath $(BUILD)/deb/perf-persistent_$(PP_VERSION)_$(shell dpkg --print-architecture).deb) \
		tests/qemu/systemd-test

setup:
	./scripts/setup

clean:
	rm -rf $(BUILD)

-include $(ALL_OBJS:.o=.d) $(FUZZ_OBJS:.o=.d)
