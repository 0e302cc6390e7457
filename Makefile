# SPDX-License-Identifier: GPL-2.0
# bbrkit build: BPF congestion controls, their skeletons, the bbrctl loader, the testbed's wire tools
# (bbrkit-delay, bbrkit-link), the kernel-BBR tools (bbrkit-lockstep, bbrkit-floor) and the host unit
# tests. Everything generated goes to build/. `make V=1` shows the commands.

CLANG ?= clang
LLVM_STRIP ?= llvm-strip
BPFTOOL ?= bpftool
CC ?= cc
PKG_CONFIG ?= pkg-config
INSTALL ?= install
PYTHON ?= python3
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(PREFIX)/bin
MANDIR := $(PREFIX)/share/man
COMPLETIONDIR := $(PREFIX)/share/bash-completion/completions
# systemd's unit directory for packages (/usr/lib/systemd/system with PREFIX=/usr).
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
UNITS := $(wildcard dist/systemd/*.service)

BUILD := build
VMLINUX_BTF := /sys/kernel/btf/vmlinux
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

BPF_SRCS := $(sort $(wildcard bpf/*.bpf.c))
ALGOS := $(patsubst bpf/%.bpf.c,%,$(BPF_SRCS))
BPF_OBJS := $(ALGOS:%=$(BUILD)/%.bpf.o)
SKELS := $(ALGOS:%=$(BUILD)/%.skel.h) $(BUILD)/policy.skel.h
BPF_HDRS := $(wildcard bpf/*.h include/*.h)

LOADER_SRCS := $(sort $(wildcard loader/*.c))
LOADER_OBJS := $(LOADER_SRCS:loader/%.c=$(BUILD)/loader/%.o)
# bbrctl-gen links bbrctl's tables without its main().
GEN_OBJS := $(filter-out $(BUILD)/loader/main.o,$(LOADER_OBJS)) $(BUILD)/loader/bbrctl-gen.o
DOCS := $(BUILD)/bbrctl.8 $(BUILD)/bbrctl.bash $(BUILD)/bbrbench.1 $(BUILD)/bbrbench.bash

DELAY_SRCS := $(sort $(wildcard bench/delayline/*.c))
WIRE_HDRS := $(wildcard bench/wire/*.h)
WIRE_SRCS := $(sort $(wildcard bench/wire/*.c))
DELAY_BIN := $(if $(DELAY_SRCS),$(BUILD)/bbrkit-delay)
# The link's queue: the kinds' enqueue and dequeue (queue.c), each AQM (codel.c, fq_codel.c, pie.c, cake.c)
# and a frame's flow hash and ECN field (packet.c); plain C, unit-tested on the host.
LINK_QUEUE_SRCS := $(addprefix bench/link/,queue.c packet.c codel.c fq_codel.c pie.c cake.c)
LINK_CORE := $(LINK_QUEUE_SRCS) $(LINK_QUEUE_SRCS:.c=.h) bench/link/queue_core.h bench/link/stages.h
# The link's process: arguments (link.c; a direction's own in path_args.c), one direction's state, set-up
# and counters (path.c), its frames in (arrival.c), its link and what follows it (service.c), its thread
# (forward.c), the XDP idle path (idle.c), traces (trace.c), the path conditions around the queue (stages.c).
LINK_SRCS := $(addprefix bench/link/,link.c path_args.c path.c arrival.c service.c forward.c idle.c trace.c stages.c)
LINK_BIN := $(BUILD)/bbrkit-link
# bpf/xdp/: the XDP program that passes every frame, attached by cpu_placement "napi" to turn on a veth's NAPI;
# installed to PREFIX/lib/bbrkit, where bbrbench looks beside PREFIX/bin/bbrkit-link (testbed/cpuplace.py).
XDP_PASS_OBJ := $(BUILD)/xdp_pass.bpf.o

# bench/kernelbbr/: the two tools that run the kernel's own BBR through struct_ops, side by side with
# what they share (kernel_bbr_tool.h for the loaders, kernel_bbr_kfuncs.h for the BPF programs). Outside bpf/, so neither joins the algorithm table.
# The lockstep check of bbr1 against the kernel's BBR; its own small loader registers it only while it runs.
LOCKSTEP_BIN := $(BUILD)/bbrkit-lockstep
LOCKSTEP_SRCS := $(wildcard bench/kernelbbr/lockstep/*.c bench/kernelbbr/lockstep/*.h) bench/kernelbbr/kernel_bbr_tool.h

# Benchmark-only: bbr_floor, the kernel's BBR behind struct_ops (the overhead benchmark's floor).
# bbrkit-floor registers it while it runs.
FLOOR_BIN := $(BUILD)/bbrkit-floor

# bbrkit-twin: the host twin of a transfer (bench/twin/), one object per algorithm it runs, each the
# algorithm's host build as the unit tests compile it; records printed by bbrctl's own record code.
TWIN_BIN := $(BUILD)/bbrkit-twin
TWIN_ALGOS := bbr1 bbr2 bbr3 bbr_draft
TWIN_OBJS := $(TWIN_ALGOS:%=$(BUILD)/twin/twin_%.o)
TWIN_RECORD_OBJS := $(BUILD)/loader/record.o $(BUILD)/loader/json.o $(BUILD)/loader/algos.o
TWIN_HDRS := $(wildcard bench/twin/*.h)

# bbrkit-v3diff: bbr3's host build beside a reference loaded at run time (tests/diff/,
# docs/v3-differential.md); `make v3diff` runs it when V3DIFF_REF names the reference's shared object.
V3DIFF_BIN := $(BUILD)/bbrkit-v3diff

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/%)
UNIT_HDRS := $(wildcard tests/unit/*.h)

BPF_CFLAGS := -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Iinclude -Ibpf
WARN_CFLAGS := -Wall -Wextra -Werror
LIBBPF_CFLAGS := $(shell $(PKG_CONFIG) --cflags libbpf 2>/dev/null)
LIBBPF_LIBS := $(or $(shell $(PKG_CONFIG) --libs libbpf 2>/dev/null),-lbpf -lelf -lz)
LOADER_CFLAGS := -O2 -g $(WARN_CFLAGS) -I$(BUILD) -Iinclude -Iloader $(LIBBPF_CFLAGS)
# bbrctl export serves HTTP through libmicrohttpd.
MHD_LIBS := $(or $(shell $(PKG_CONFIG) --libs libmicrohttpd 2>/dev/null),-lmicrohttpd)
# The two wire processes (bbrkit-delay, bbrkit-link) share bench/wire: its sources build into both.
WIRE_CFLAGS := -O2 -g $(WARN_CFLAGS) -pthread -Ibench/wire
# The algorithm hooks share one signature and not every algorithm uses every argument.
UNIT_CFLAGS := -O1 -g $(WARN_CFLAGS) -Wno-unused-parameter -Iinclude -Ibpf -Itests/unit

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all test install clean deps FORCE

all: $(BUILD)/bbrctl $(DELAY_BIN) $(LINK_BIN) $(XDP_PASS_OBJ) $(UNIT_BINS) $(LOCKSTEP_BIN) $(FLOOR_BIN) $(TWIN_BIN) $(V3DIFF_BIN) $(DOCS)

$(BUILD) $(BUILD)/loader $(BUILD)/lockstep $(BUILD)/floor $(BUILD)/twin:
	$(Q)mkdir -p $@

# Generated from the running kernel: callback signatures differ between kernels. After booting
# another kernel, run `make clean`.
$(BUILD)/vmlinux.h: | $(BUILD)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

# BPF objects are stripped of DWARF (-g keeps .BTF and .BTF.ext, which libbpf, the verifier and bpftool
# read): bbrctl embeds five of them, 4.7 MB with DWARF, 1.2 MB without.
$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BUILD)/vmlinux.h $(BPF_HDRS) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

# bpf/policy/: the policy's sockops and iterator programs, not a congestion control, so outside the
# algorithm table; bbrctl embeds it all the same.
$(BUILD)/policy.bpf.o: bpf/policy/policy.bpf.c $(BUILD)/vmlinux.h $(BPF_HDRS) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(XDP_PASS_OBJ): bpf/xdp/xdp_pass.bpf.c $(BUILD)/vmlinux.h | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

# The link's idle path (bpf/xdp/link_idle.bpf.c), embedded in bbrkit-link as a skeleton.
$(BUILD)/link_idle.bpf.o: bpf/xdp/link_idle.bpf.c $(BUILD)/vmlinux.h | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@

# The loader's algorithm table is the set of bpf/*.bpf.c files. The header is rewritten only when
# that set changes, so adding nothing rebuilds nothing.
$(BUILD)/bbrkit_algos.h: FORCE | $(BUILD)
	$(Q){ printf '/* Generated by the Makefile from bpf/<algo>.bpf.c. */\n'; \
	  for a in $(ALGOS); do printf '#include "%s.skel.h"\n' "$$a"; done; \
	  printf '#define BBRKIT_ALGOS(X)'; \
	  for a in $(ALGOS); do printf ' X(%s)' "$$a"; done; \
	  printf '\n'; } > $@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

# bbrctl --version: git describe at build time, and the SHA-256 of the BPF objects bbrctl embeds (the
# harness pools runs whose objects match; the version string changes with every commit). Rewritten
# only when either changes.
$(BUILD)/bbrkit_version.h: $(BPF_OBJS) FORCE | $(BUILD)
	$(Q){ printf '#define BBRKIT_VERSION "%s"\n' \
	    "$$(git describe --tags --always --dirty 2>/dev/null || echo unknown)"; \
	  printf '#define BBRKIT_OBJECTS_SHA256 "%s"\n' "$$(cat $(BPF_OBJS) | sha256sum | cut -d' ' -f1)"; \
	} > $@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/loader/main.o $(BUILD)/loader/export.o $(BUILD)/loader/bbrctl-gen.o: $(BUILD)/bbrkit_version.h

$(BUILD)/loader/bbrctl-gen.o: loader/gen/bbrctl-gen.c $(BUILD)/bbrkit_algos.h | $(BUILD)/loader
	$(call msg,CC,$@)
	$(Q)$(CC) $(LOADER_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/loader/%.o: loader/%.c $(BUILD)/bbrkit_algos.h $(SKELS) | $(BUILD)/loader
	$(call msg,CC,$@)
	$(Q)$(CC) $(LOADER_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/bbrctl: $(LOADER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LOADER_CFLAGS) $^ $(LIBBPF_LIBS) $(MHD_LIBS) -lm -o $@

$(BUILD)/bbrctl-gen: $(GEN_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LOADER_CFLAGS) $^ $(LIBBPF_LIBS) $(MHD_LIBS) -lm -o $@

$(BUILD)/bbrctl.8: $(BUILD)/bbrctl-gen
	$(call msg,GEN,$@)
	$(Q)$< man > $@

$(BUILD)/bbrctl.bash: $(BUILD)/bbrctl-gen
	$(call msg,GEN,$@)
	$(Q)$< completion > $@

# From bbrbench's own argument parser.
$(BUILD)/bbrbench.1: scripts/bbrbench-gen.py $(wildcard bench/bbrbench/*.py bench/bbrbench/*/*.py) | $(BUILD)
	$(call msg,GEN,$@)
	$(Q)PYTHONPATH=bench python3 scripts/bbrbench-gen.py man > $@

$(BUILD)/bbrbench.bash: scripts/bbrbench-gen.py $(wildcard bench/bbrbench/*.py bench/bbrbench/*/*.py) | $(BUILD)
	$(call msg,GEN,$@)
	$(Q)PYTHONPATH=bench python3 scripts/bbrbench-gen.py completion > $@

$(BUILD)/bbrkit-delay: $(DELAY_SRCS) $(wildcard bench/delayline/*.h) $(WIRE_SRCS) $(WIRE_HDRS) | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WIRE_CFLAGS) -o $@ $(DELAY_SRCS) $(WIRE_SRCS)

$(LINK_BIN): $(LINK_SRCS) $(LINK_CORE) $(wildcard bench/link/*.h) $(WIRE_SRCS) $(WIRE_HDRS) $(BUILD)/link_idle.skel.h | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WIRE_CFLAGS) -Ibench/link -I$(BUILD) $(LIBBPF_CFLAGS) -o $@ $(LINK_SRCS) $(LINK_QUEUE_SRCS) $(WIRE_SRCS) -lm $(LIBBPF_LIBS)

$(BUILD)/lockstep/bbr_lockstep.bpf.o: $(LOCKSTEP_SRCS) bench/kernelbbr/kernel_bbr_kfuncs.h $(BUILD)/vmlinux.h $(BPF_HDRS) | $(BUILD)/lockstep
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Ibench/kernelbbr/lockstep -Ibench/kernelbbr -c bench/kernelbbr/lockstep/bbr_lockstep.bpf.c -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(BUILD)/lockstep/bbr_lockstep.skel.h: $(BUILD)/lockstep/bbr_lockstep.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name bbr_lockstep > $@

$(LOCKSTEP_BIN): $(BUILD)/lockstep/bbr_lockstep.skel.h $(LOCKSTEP_SRCS) loader/struct_ops_link.h
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LOADER_CFLAGS) -I$(BUILD)/lockstep -Ibench/kernelbbr/lockstep -Ibench/kernelbbr bench/kernelbbr/lockstep/lockstep.c $(LIBBPF_LIBS) -o $@

$(BUILD)/floor/bbr_floor.bpf.o: bench/kernelbbr/floor/bbr_floor.bpf.c bpf/cc_struct_ops.h bench/kernelbbr/kernel_bbr_kfuncs.h $(BUILD)/vmlinux.h | $(BUILD)/floor
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Ibench/kernelbbr -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(BUILD)/floor/bbr_floor.skel.h: $(BUILD)/floor/bbr_floor.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name bbr_floor > $@

$(FLOOR_BIN): bench/kernelbbr/floor/floor.c $(BUILD)/floor/bbr_floor.skel.h bench/kernelbbr/kernel_bbr_tool.h loader/struct_ops_link.h
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LOADER_CFLAGS) -I$(BUILD)/floor -Ibench/kernelbbr $< $(LIBBPF_LIBS) -o $@

$(BUILD)/twin/twin_%.o: bench/twin/twin_algo.c bpf/%.bpf.c $(TWIN_HDRS) $(BPF_HDRS) $(UNIT_HDRS) | $(BUILD)/twin
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) -O2 -Ibench/twin -DTWIN_ALGO=$* -c $< -o $@

$(TWIN_BIN): bench/twin/twin.c bench/twin/twin.h $(TWIN_OBJS) $(TWIN_RECORD_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LOADER_CFLAGS) -Ibench/twin $< $(TWIN_OBJS) $(TWIN_RECORD_OBJS) -lm -o $@

$(V3DIFF_BIN): tests/diff/v3diff.c tests/diff/v3diff_ref.h $(BPF_HDRS) $(UNIT_HDRS) $(TWIN_HDRS) | $(BUILD)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) -O2 -Ibench/twin -Itests/diff $< -ldl -o $@

.PHONY: v3diff
v3diff: $(V3DIFF_BIN)
	$(Q)if [ -z "$(V3DIFF_REF)" ]; then \
	  echo "v3diff: skipped: V3DIFF_REF names no reference shared object (docs/v3-differential.md)"; \
	else $(V3DIFF_BIN) --seeds 5; fi

# The link emulator's queue core is plain C too, tested on the host like the BBR core.
$(BUILD)/test_queue $(BUILD)/test_cake: $(BUILD)/test_%: tests/unit/test_%.c $(LINK_CORE) $(UNIT_HDRS) | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) -Ibench/link -o $@ $< $(LINK_QUEUE_SRCS) -lm

$(BUILD)/test_stages: tests/unit/test_stages.c bench/link/stages.c bench/link/stages.h $(UNIT_HDRS) | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) -Ibench/link -o $@ $< bench/link/stages.c

# The wire tools' trust-check counters (bench/wire/lateness.c), shared by bbrkit-delay and bbrkit-link.
$(BUILD)/test_lateness: tests/unit/test_lateness.c bench/wire/lateness.c bench/wire/lateness.h $(UNIT_HDRS) | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) -Ibench/wire -o $@ $< bench/wire/lateness.c

# bbr2's and bbr3's closed-loop tests run on the twin's path (tests/unit/sim_loop.h includes
# bench/twin/twin_path.h).
$(BUILD)/test_bbr2 $(BUILD)/test_bbr3_pp: $(BUILD)/test_%: tests/unit/test_%.c $(BPF_HDRS) $(UNIT_HDRS) $(TWIN_HDRS) | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) -Ibench/twin -o $@ $<

$(BUILD)/test_%: tests/unit/test_%.c $(BPF_HDRS) $(UNIT_HDRS) | $(BUILD)
	$(call msg,CC,$@)
	$(Q)$(CC) $(UNIT_CFLAGS) -o $@ $<

# scripts/test.sh builds and runs check-readme itself, so that CI (.ci/run) runs exactly this.
test:
	$(Q)scripts/test.sh

# The quick profile of every seed experiment (about an hour); rerunning resumes an interrupted run.
.PHONY: reproduce
reproduce: all
	$(Q)scripts/install-deps.sh
	$(Q)PATH="$(CURDIR)/$(BUILD):$$PATH" .venv/bin/bbrbench reproduce --profile quick

# bbrbench goes to $(PYTHON)'s prefix scheme without its dependencies: on Debian they are the packages
# python3-numpy, python3-scipy, python3-matplotlib, python3-tabulate, python3-tqdm and python3-prometheus-client (their Debian 12
# versions are the tested minimums). The harness then finds bbrctl and bbrkit-delay on PATH.
install: $(BUILD)/bbrctl $(DELAY_BIN) $(LINK_BIN) $(XDP_PASS_OBJ) $(DOCS)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man1 \
	  $(DESTDIR)$(COMPLETIONDIR)
	$(Q)$(INSTALL) -m 0755 $(BUILD)/bbrctl $(DELAY_BIN) $(LINK_BIN) $(DESTDIR)$(BINDIR)/
	$(Q)$(INSTALL) -D -m 0644 $(XDP_PASS_OBJ) $(DESTDIR)$(PREFIX)/lib/bbrkit/xdp_pass.bpf.o
	$(Q)$(INSTALL) -m 0644 $(BUILD)/bbrctl.8 $(DESTDIR)$(MANDIR)/man8/
	$(Q)$(INSTALL) -m 0644 $(BUILD)/bbrbench.1 $(DESTDIR)$(MANDIR)/man1/
	$(Q)$(INSTALL) -m 0644 $(BUILD)/bbrctl.bash $(DESTDIR)$(COMPLETIONDIR)/bbrctl
	$(Q)$(INSTALL) -m 0644 $(BUILD)/bbrbench.bash $(DESTDIR)$(COMPLETIONDIR)/bbrbench
	$(Q)$(INSTALL) -d $(DESTDIR)$(SYSTEMDUNITDIR)
	$(Q)for u in $(UNITS); do sed 's|@BINDIR@|$(BINDIR)|g' $$u > $(DESTDIR)$(SYSTEMDUNITDIR)/$${u##*/}; \
	  chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/$${u##*/}; done
	$(call msg,INSTALL,bbrbench)
	$(Q)rm -rf $(BUILD)/lib  # setuptools builds in there and never removes a file that left the source
	$(Q)$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-deps --no-warn-script-location \
		--root-user-action=ignore --ignore-installed --root "$(or $(DESTDIR),/)" --prefix "$(PREFIX)" .
	$(Q)$(PYTHON) -c 'import numpy, scipy, matplotlib, tabulate, tqdm, prometheus_client' 2>/dev/null || \
		echo "note: bbrbench needs numpy, scipy, matplotlib, tabulate, tqdm, prometheus_client for $(PYTHON):" \
		"apt-get install python3-numpy python3-scipy python3-matplotlib python3-tabulate python3-tqdm python3-prometheus-client"

# The record key list in docs/reference.md is `bbrctl trace --help`'s, its BBRCTL_DISABLE key list
# `bbrctl-gen disable-keys`': this fails when either differs. $(call doc_block,NAME): the text between
# the reference's `<!-- NAME: make check-readme -->` and `<!-- end NAME -->`, without the code fence.
doc_block = sed -n '/^<!-- $(1): make check-readme -->/,/^<!-- end $(1) -->/p' docs/reference.md \
	  | sed -e '1,2d' -e '$$d' | sed '$$d'
.PHONY: check-readme
check-readme: $(BUILD)/bbrctl $(BUILD)/bbrctl-gen
	$(Q)$(BUILD)/bbrctl trace --help | sed -n '/^record keys/,$$p' > $(BUILD)/keys.txt
	$(Q)$(call doc_block,record keys) | diff -u - $(BUILD)/keys.txt
	$(Q)$(BUILD)/bbrctl-gen disable-keys > $(BUILD)/disable-keys.txt
	$(Q)$(call doc_block,disable keys) | diff -u - $(BUILD)/disable-keys.txt

clean:
	$(call msg,CLEAN,$(BUILD))
	$(Q)rm -rf $(BUILD) bench/bbrbench.egg-info

deps:
	$(Q)scripts/install-deps.sh

-include $(LOADER_OBJS:.o=.d) $(BUILD)/loader/bbrctl-gen.d
