# Makefile: spanprof. `make`, `make test`, `make demo`, `make bench`, `make SANITIZE=address,undefined test`, V=1.
.DELETE_ON_ERROR:
.SUFFIXES:
.SECONDEXPANSION:

BUILD     ?= $(if $(SANITIZE),build/san,build)
ARCH      := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
CC        ?= gcc
CLANG     ?= clang
BPFTOOL   ?= bpftool
PROTOC_C  ?= protoc-c
VERSION   := $(shell git describe --always --dirty 2>/dev/null || echo 0.1)

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS    ?= -O2 -g -fno-omit-frame-pointer
WARN      := -Wall -Wextra -Werror -Wno-unused-parameter
USER_DIRS := $(sort $(dir $(wildcard user/*/*.c)))
CPPFLAGS  := -D_GNU_SOURCE -I. -Ibpf -Ilib $(USER_DIRS:%/=-I%) -Iperfmap -I$(BUILD) -I$(BUILD)/gen \
             -DSPANPROF_VERSION='"$(VERSION)"'
LDLIBS    := -lbpf -lelf -ldw -lz -lprotobuf-c -lcurl -lmicrohttpd -lpthread -lstdc++
ifneq ($(SANITIZE),)
CFLAGS    += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS   += -fsanitize=$(SANITIZE)
# gcc 12's format-truncation analysis sees NULL arguments that the instrumentation introduces.
WARN      += -Wno-format-truncation
endif

# ---- dependencies -------------------------------------------------------------------------
DEPS_STAMP := $(BUILD)/.deps-ok
$(DEPS_STAMP): scripts/install-deps.sh
	$(Q)./scripts/install-deps.sh
	$(Q)mkdir -p $(@D) && touch $@

deps: $(DEPS_STAMP)

# ---- BPF -----------------------------------------------------------------------------------
$(BUILD)/vmlinux.h: | $(DEPS_STAMP)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(BUILD)/profiler.bpf.o: bpf/profiler.bpf.c bpf/profiler.h $(BUILD)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Ibpf -c $< -o $@
	$(Q)$(BPFTOOL) gen object $@.tmp.o $@ && mv $@.tmp.o $@

$(BUILD)/profiler.skel.h: $(BUILD)/profiler.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name profiler_bpf > $@

# ---- protobuf-c ----------------------------------------------------------------------------
$(BUILD)/gen/profile.pb-c.c $(BUILD)/gen/profile.pb-c.h &: user/profile/profile.proto | $(DEPS_STAMP)
	$(call msg,PROTOC,$@)
	$(Q)mkdir -p $(BUILD)/gen
	$(Q)$(PROTOC_C) --proto_path=user/profile --c_out=$(BUILD)/gen user/profile/profile.proto

# ---- protobuf-c: exporters (Pyroscope push, OTLP) -------------------------------------------
# EXPORT_PROTO_OBJS lists their generated objects; EXPORT_PROTO_HDRS their headers.
EXPORT_PROTO_OBJS :=
EXPORT_PROTO_HDRS :=

# Pyroscope's push API. protoc-c runs with the proto root as its path, so the generated
# push.pb-c.h includes "types/v1/types.pb-c.h" (found through -I$(BUILD)/gen).
PYRO_PROTOS := types/v1/types push/v1/push
PYRO_PROTOC  = $(Q)mkdir -p $(BUILD)/gen && $(PROTOC_C) --proto_path=user/export/proto --c_out=$(BUILD)/gen $<
$(BUILD)/gen/types/v1/types.pb-c.c $(BUILD)/gen/types/v1/types.pb-c.h &: user/export/proto/types/v1/types.proto | $(DEPS_STAMP)
	$(call msg,PROTOC,$@)
	$(PYRO_PROTOC)
$(BUILD)/gen/push/v1/push.pb-c.c $(BUILD)/gen/push/v1/push.pb-c.h &: user/export/proto/push/v1/push.proto | $(DEPS_STAMP)
	$(call msg,PROTOC,$@)
	$(PYRO_PROTOC)
$(PYRO_PROTOS:%=$(BUILD)/obj/gen/%.pb-c.o): $(BUILD)/obj/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c \
		$(PYRO_PROTOS:%=$(BUILD)/gen/%.pb-c.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
EXPORT_PROTO_OBJS += $(PYRO_PROTOS:%=$(BUILD)/obj/gen/%.pb-c.o)
EXPORT_PROTO_HDRS += $(PYRO_PROTOS:%=$(BUILD)/gen/%.pb-c.h)

# ---- user space ----------------------------------------------------------------------------
LIB_SRCS     := $(wildcard lib/*.c)
PERFMAP_SRCS := $(wildcard perfmap/*.c)
USER_SRCS    := $(filter-out user/cmd/main.c,$(wildcard user/*/*.c))
OBJ          := $(BUILD)/obj
PROTO_OBJ    := $(OBJ)/gen/profile.pb-c.o $(EXPORT_PROTO_OBJS)
LIB_OBJS     := $(LIB_SRCS:%.c=$(OBJ)/%.o)
PERFMAP_OBJS := $(PERFMAP_SRCS:%.c=$(OBJ)/%.o) $(LIB_OBJS)
USER_OBJS    := $(USER_SRCS:%.c=$(OBJ)/%.o)
ALL_OBJS     := $(USER_OBJS) $(PERFMAP_OBJS) $(PROTO_OBJ)
GEN_HDRS     := $(BUILD)/profiler.skel.h $(BUILD)/gen/profile.pb-c.h $(EXPORT_PROTO_HDRS) $(BUILD)/vmlinux.h

$(OBJ)/%.o: %.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -MMD -MP -c $< -o $@

$(OBJ)/gen/profile.pb-c.o: $(BUILD)/gen/profile.pb-c.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# Generated headers must exist before any user object compiles.
$(USER_OBJS) $(OBJ)/user/cmd/main.o: | $(GEN_HDRS)

$(BUILD)/spanprof: $(OBJ)/user/cmd/main.o $(ALL_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)

# ---- hook and .NET apps --------------------------------------------------------------------
# Each .NET project rebuilds when one of its sources changes; obj/ and bin/ never count.
dotnet_srcs = $(shell find $(1) \( -name obj -o -name bin \) -prune -o \( -name '*.cs' -o -name '*.csproj' -o -name '*.props' \) -print 2>/dev/null)
DOTNET_BUILD = $(Q)dotnet build $(1) -c Release -o $(2) -nologo -v q -clp:NoSummary

HOOK_DLL := $(BUILD)/hook/SpanProf.Hook.dll
$(HOOK_DLL): $(call dotnet_srcs,hook/src) hook/SpanProf.Hook.csproj hook/startup/SpanProf.Hook.Startup.csproj | $(DEPS_STAMP)
	$(call msg,DOTNET,$@)
	$(call DOTNET_BUILD,hook/SpanProf.Hook.csproj,$(BUILD)/hook)
	$(call DOTNET_BUILD,hook/startup/SpanProf.Hook.Startup.csproj,$(BUILD)/hook)
	$(Q)touch $@

APP_DLLS := $(foreach a,HotChain SpanService LoadGen,$(BUILD)/apps/$(a)/$(a).dll)
$(BUILD)/apps/%.dll: $$(call dotnet_srcs,tests/apps/$$(firstword $$(subst /, ,$$*))) $(HOOK_DLL)
	$(call msg,DOTNET,$@)
	$(call DOTNET_BUILD,tests/apps/$(firstword $(subst /, ,$*)),$(@D))
	$(Q)touch $@

hook: $(HOOK_DLL)
apps: $(HOOK_DLL) $(APP_DLLS)

# ---- unit tests ----------------------------------------------------------------------------
# Each tests/unit/test_X.c links against the objects in TEST_OBJS_X, or everything when unset,
# so a test only needs the modules it exercises.
TEST_SRCS := $(wildcard tests/unit/test_*.c)
TESTS     := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TEST_OBJS_test_perfmap  = $(PERFMAP_OBJS)
TEST_OBJS_test_jitdump  = $(PERFMAP_OBJS)
TEST_OBJS_test_addrindex = $(PERFMAP_OBJS)
TEST_OBJS_test_diagipc  = $(PERFMAP_OBJS)
TEST_OBJS_test_dotnet   = $(PERFMAP_OBJS)
TEST_OBJS_test_elfsym   = $(OBJ)/user/symbols/elfsym.o $(OBJ)/user/symbols/kallsyms.o $(OBJ)/perfmap/rootfs.o \
                          $(LIB_OBJS)
TEST_OBJS_test_kallsyms = $(OBJ)/user/symbols/kallsyms.o $(LIB_OBJS)
TEST_OBJS_test_spanctx  = $(TEST_OBJS_test_proctab)
TEST_OBJS_test_intern  = $(LIB_OBJS)
TEST_OBJS_test_names   = $(PERFMAP_OBJS)
PROCESS_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(wildcard user/process/*.c))
TEST_OBJS_test_proctab  = $(sort $(PROCESS_OBJS) $(PERFMAP_OBJS))
TEST_OBJS_test_profile  = $(OBJ)/user/profile/profile.o $(OBJ)/user/profile/pprof.o $(OBJ)/user/profile/folded.o \
                          $(OBJ)/user/profile/flamegraph.o $(PROTO_OBJ) $(LIB_OBJS)
TEST_OBJS_test_pprof    = $(TEST_OBJS_test_profile)
TEST_OBJS_test_aggregate = $(OBJ)/user/profile/aggregate.o $(TEST_OBJS_test_profile)
TEST_OBJS_test_folded   = $(TEST_OBJS_test_profile)
TEST_OBJS_test_flamegraph = $(TEST_OBJS_test_profile)
TEST_OBJS_test_pyroscope = $(OBJ)/user/export/pyroscope.o $(OBJ)/user/export/delivery.o $(TEST_OBJS_test_profile)
TEST_OBJS_test_delivery = $(TEST_OBJS_test_pyroscope)
TEST_OBJS_test_metrics  = $(OBJ)/user/export/metrics.o $(LIB_OBJS)
TEST_OBJS_test_identity = $(OBJ)/user/process/identity.o $(LIB_OBJS)

$(BUILD)/tests/%: tests/unit/%.c $$(if $$(TEST_OBJS_$$*),$$(TEST_OBJS_$$*),$$(ALL_OBJS)) | $(BUILD)/gen/profile.pb-c.h
	$(call msg,TEST,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(LDFLAGS) $^ $(LDLIBS) -lcmocka -o $@

# Test drivers the integration tests run against live processes.
TOOLS := $(BUILD)/tools/ctxdump $(BUILD)/tools/diagipc-enable $(BUILD)/tools/pyroscope-push
$(BUILD)/tools/ctxdump: tests/tools/ctxdump.c $(TEST_OBJS_test_spanctx) | $(BUILD)/gen/profile.pb-c.h
$(BUILD)/tools/diagipc-enable: tests/tools/diagipc-enable.c $(PERFMAP_OBJS)
$(BUILD)/tools/pyroscope-push: tests/tools/pyroscope-push.c $(TEST_OBJS_test_pyroscope) | $(EXPORT_PROTO_HDRS)
$(TOOLS):
	$(call msg,TOOL,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(LDFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -o $@

# The native test programs: the known call chain (frames kept: see hotchain.c), a forged span table.
NATIVE_APPS := $(BUILD)/apps/native/hotchain $(BUILD)/apps/native/forged_table
$(BUILD)/apps/native/hotchain: tests/apps/native/hotchain.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O0 -g -fno-omit-frame-pointer $(WARN) $< -o $@
$(BUILD)/apps/native/forged_table: tests/apps/native/forged_table.c bpf/profiler.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -Ibpf -O1 -g $(WARN) $< -o $@

tools: $(TOOLS) $(NATIVE_APPS)

unit: $(TESTS)
	$(Q)set -e; for t in $(TESTS); do echo "== $$t"; $$t; done

# ---- fuzz and bench (perfmap) ----
# libFuzzer targets build the perfmap core alone with clang; `make fuzz` builds them, run e.g.
# build/fuzz/fuzz_perfmap -max_total_time=600 tests/fuzz/corpus/perfmap. The bench only prints.
PERFMAP_CORE := perfmap/perfmap.c perfmap/jitdump.c perfmap/addrindex.c lib/intern.c lib/hexnum.c
PERFMAP_CORE_HDRS := perfmap/perfmap.h perfmap/perfmap_int.h perfmap/addrindex.h lib/intern.h lib/hexnum.h
FUZZ_TARGETS := $(BUILD)/fuzz/fuzz_perfmap $(BUILD)/fuzz/fuzz_jitdump

$(BUILD)/fuzz/%: tests/fuzz/%.c $(PERFMAP_CORE) $(PERFMAP_CORE_HDRS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-D_GNU_SOURCE -Iperfmap -Ilib $(WARN) $< $(PERFMAP_CORE) -o $@

fuzz: $(FUZZ_TARGETS)

$(BUILD)/bench/bench_perfmap: tests/bench/bench_perfmap.c $(PERFMAP_CORE) $(PERFMAP_CORE_HDRS)
	$(call msg,BENCH,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -D_GNU_SOURCE -Iperfmap -Ilib -O2 -g $(WARN) $< $(PERFMAP_CORE) -o $@

.PHONY: fuzz

# ---- top-level targets ---------------------------------------------------------------------
all: $(BUILD)/spanprof $(HOOK_DLL)

test: all apps tools unit
	$(Q)BUILD=$(BUILD) ./tests/run-integration.sh

demo: all apps
	$(Q)BUILD=$(BUILD) ./scripts/demo.sh

bench: all apps tools $(BUILD)/bench/bench_perfmap
	$(Q)BUILD=$(BUILD) ./scripts/bench.sh

clean:
	rm -rf $(BUILD)

.PHONY: all deps hook apps tools unit test demo bench clean
.DEFAULT_GOAL := all
