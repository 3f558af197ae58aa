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
# libstdc++ for its demangler only, linked in statically: its object, not the shared library (about
# 1 MiB of every process's RSS once relocated, for one function).
LDLIBS    := -lbpf -lelf -ldw -lz -lprotobuf-c -lcurl -lmicrohttpd -lpthread -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic
ifneq ($(SANITIZE),)
CFLAGS    += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS   += -fsanitize=$(SANITIZE)
# gcc 12's format-truncation analysis sees NULL arguments that the instrumentation introduces.
WARN      += -Wno-format-truncation
# Leaks inside the system's libelf/libdw, not ours (tests/lsan.supp says which).
# fast_unwind_on_malloc=0: libelf has no frame pointers, and the suppression needs its frames.
export LSAN_OPTIONS := suppressions=$(CURDIR)/tests/lsan.supp:fast_unwind_on_malloc=0
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

# One object and skeleton per bpf/X.bpf.c (profiler: the sampler; procevents: process events).
BPF_OBJS := profiler procevents
$(BPF_OBJS:%=$(BUILD)/%.bpf.o): $(BUILD)/%.bpf.o: bpf/%.bpf.c bpf/profiler.h bpf/gens.bpf.h $(BUILD)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Ibpf -c $< -o $@
	$(Q)$(BPFTOOL) gen object $@.tmp.o $@ && mv $@.tmp.o $@

$(BPF_OBJS:%=$(BUILD)/%.skel.h): $(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@

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

# OTLP profiles (opentelemetry-proto v1.10.0: the files name the release). The same layout: the
# generated headers include each other as "opentelemetry/proto/.../x.pb-c.h".
OTLP_PROTOS := opentelemetry/proto/common/v1/common opentelemetry/proto/resource/v1/resource \
               opentelemetry/proto/profiles/v1development/profiles \
               opentelemetry/proto/collector/profiles/v1development/profiles_service
$(BUILD)/gen/opentelemetry/%.pb-c.c $(BUILD)/gen/opentelemetry/%.pb-c.h: user/export/proto/opentelemetry/%.proto | $(DEPS_STAMP)
	$(call msg,PROTOC,$@)
	$(PYRO_PROTOC)
$(OTLP_PROTOS:%=$(BUILD)/obj/gen/%.pb-c.o): $(BUILD)/obj/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c \
		$(OTLP_PROTOS:%=$(BUILD)/gen/%.pb-c.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
EXPORT_PROTO_OBJS += $(OTLP_PROTOS:%=$(BUILD)/obj/gen/%.pb-c.o)
EXPORT_PROTO_HDRS += $(OTLP_PROTOS:%=$(BUILD)/gen/%.pb-c.h)

# The OTEP 4719 process context's payload (user/process/otelctx.c), on OTLP's common and resource
# messages above (generated by the same pattern rule). OTELCTX_PROTO_OBJS: what a program that
# links otelctx.o (the process runtimes) needs.
OTELCTX_PROTOS := opentelemetry/proto/processcontext/v1development/process_context
$(OTELCTX_PROTOS:%=$(BUILD)/obj/gen/%.pb-c.o): $(BUILD)/obj/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c \
		$(OTELCTX_PROTOS:%=$(BUILD)/gen/%.pb-c.h) $(OTLP_PROTOS:%=$(BUILD)/gen/%.pb-c.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
OTELCTX_PROTO_OBJS := $(OTELCTX_PROTOS:%=$(BUILD)/obj/gen/%.pb-c.o) \
                      $(BUILD)/obj/gen/opentelemetry/proto/common/v1/common.pb-c.o \
                      $(BUILD)/obj/gen/opentelemetry/proto/resource/v1/resource.pb-c.o
EXPORT_PROTO_OBJS += $(OTELCTX_PROTOS:%=$(BUILD)/obj/gen/%.pb-c.o)
EXPORT_PROTO_HDRS += $(OTELCTX_PROTOS:%=$(BUILD)/gen/%.pb-c.h)

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
GEN_HDRS     := $(BPF_OBJS:%=$(BUILD)/%.skel.h) $(BUILD)/gen/profile.pb-c.h $(EXPORT_PROTO_HDRS) $(BUILD)/vmlinux.h

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

# build/spanprof-test: the same program with the switches only tests may use compiled in
# (SPANPROF_TEST_BUILD: $SPANPROF_TEST_REMOTE_FSTYPES in lib/procfs.c, $SPANPROF_TEST_CTX_EVENTS in
# user/session/procevents.c, the benchmarks' $SPANPROF_BPF_VARIANT in user/session/bpfsession.c).
# The shipped build/spanprof never reads them (tests/integration/switches.sh).
TESTBUILD_SRCS := lib/procfs.c user/session/procevents.c user/session/bpfsession.c
TESTBUILD_OBJS := $(TESTBUILD_SRCS:%.c=$(OBJ)/testbuild/%.o)
$(TESTBUILD_OBJS): $(OBJ)/testbuild/%.o: %.c | $(DEPS_STAMP) $(GEN_HDRS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -DSPANPROF_TEST_BUILD $(CFLAGS) $(WARN) -MMD -MP -c $< -o $@
# testbuild_objs OBJS: OBJS with the test build's objects in place of the shipped ones.
testbuild_objs = $(filter-out $(TESTBUILD_SRCS:%.c=$(OBJ)/%.o),$(1)) \
	$(filter $(TESTBUILD_SRCS:%.c=$(OBJ)/testbuild/%.o),$(patsubst $(OBJ)/%,$(OBJ)/testbuild/%,$(1)))

$(BUILD)/spanprof-test: $(call testbuild_objs,$(OBJ)/user/cmd/main.o $(ALL_OBJS))
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)

# ---- hook and .NET apps --------------------------------------------------------------------
# Each .NET project rebuilds when one of its sources changes; obj/ and bin/ never count. The hook's
# projects keep obj/ and bin/ under $(BUILD) (hook/Directory.Build.props: SpanProfBuildDir).
dotnet_srcs = $(shell find $(1) \( -name obj -o -name bin \) -prune -o \( -name '*.cs' -o -name '*.csproj' -o -name '*.props' -o -name '*.targets' \) -print 2>/dev/null)
DOTNET_PROPS = -p:SpanProfBuildDir=$(abspath $(BUILD)) -nologo -v q -clp:NoSummary
DOTNET_BUILD = $(Q)dotnet build $(1) -c Release -o $(2) $(DOTNET_PROPS)

# The hook: $(HOOK_DLL) is the one file for DOTNET_STARTUP_HOOKS (and what `spanprof record --
# COMMAND` injects); the package carries the same assembly. Its version is set in one place,
# hook/Directory.Build.props. SpanProf.Hook.Startup.dll (the same sources under another assembly
# name) is built for tests/integration/hook-table.sh's two-copies cases and deploy/ only.
HOOK_VERSION := $(shell sed -n 's:.*<Version>\(.*\)</Version>.*:\1:p' hook/Directory.Build.props)
HOOK_SRCS := $(call dotnet_srcs,hook/src) hook/SpanProf.Hook.csproj hook/Directory.Build.props
HOOK_DLL := $(BUILD)/hook/SpanProf.Hook.dll
HOOK_PKG := $(BUILD)/nuget/SpanProf.Hook.$(HOOK_VERSION).nupkg
# The hook targets net6.0 and net8.0 (SpanProf.Hook.csproj says why): both build to their own bin/
# folders, which `dotnet pack --no-build` packs; $(HOOK_DLL) is the net6.0 one.
HOOK_BIN := $(BUILD)/bin/hook/SpanProf.Hook/Release
$(HOOK_DLL): $(HOOK_SRCS) hook/startup/SpanProf.Hook.Startup.csproj | $(DEPS_STAMP)
	$(call msg,DOTNET,$@)
	$(Q)dotnet build hook/SpanProf.Hook.csproj -c Release $(DOTNET_PROPS)
	$(Q)mkdir -p $(@D) && cp $(HOOK_BIN)/net6.0/SpanProf.Hook.* $(@D)/
	$(call DOTNET_BUILD,hook/startup/SpanProf.Hook.Startup.csproj,$(BUILD)/hook)
	$(Q)touch $@

# `dotnet pack` of what $(HOOK_DLL) built (--no-build: nothing compiles twice), with the package
# README, the build targets that start the hook before Main and the module initializer they add to
# apps that run no startup hook (hook/package/).
$(HOOK_PKG): $(HOOK_DLL) $(wildcard hook/package/*)
	$(call msg,PACK,$@)
	$(Q)rm -f $(BUILD)/nuget/SpanProf.Hook.*.nupkg
	$(Q)dotnet pack hook/SpanProf.Hook.csproj -c Release --no-build -o $(BUILD)/nuget $(DOTNET_PROPS)
	$(Q)test -s $@ || { echo "dotnet pack made no $@" >&2; exit 1; }

APP_DLLS := $(foreach a,HotChain SpanService LoadGen LeafCall CoreLibMix SpanLoop CodeGen OffCpu,$(BUILD)/apps/$(a)/$(a).dll)
$(BUILD)/apps/%.dll: $$(call dotnet_srcs,tests/apps/$$(firstword $$(subst /, ,$$*))) $(wildcard tests/apps/Shared/*.cs) $(HOOK_DLL)
	$(call msg,DOTNET,$@)
	$(call DOTNET_BUILD,tests/apps/$(firstword $(subst /, ,$*)),$(@D))
	$(Q)touch $@

# The test apps in the other shapes .NET ships in (make shapes; used by make test-matrix), each
# $(SHAPES)/<shape>/<App>/<App>. Runtime packs come from the NuGet feed; obj/ and bin/ are per shape
# (the apps' Directory.Build.props, the hook's SpanProfBuildDir) under $(SHAPES)/msbuild/. SpanService
# gets the hook as the package gives it (its .csproj imports hook/package/SpanProf.Hook.targets).
#   composite  self-contained composite ReadyToRun (the app and its framework in one <App>.r2r.dll)
#   aot        Native AOT: the binary and its symbols (<App>.dbg, found by .gnu_debuglink)
#   trimmed    self-contained, PublishTrimmed (no startup hooks: the package's module initializer)
#   rt8, rt9   self-contained on the runtime packs of .NET 8 and 9 (the patch the SDK picks)
#   rt11       self-contained on runtime $(RT11): the SDK (10) builds the apps for their own target
#              (net8.0; a global TargetFramework would reach the hook's project too)
SHAPES := $(BUILD)/shapes
SHAPE_TFM ?= net10.0
RT11 ?= 11.0.0
tfm_args = -f $(1) -p:TargetFrameworks=$(1)
SHAPE_ARGS_composite := --self-contained -p:PublishReadyToRun=true -p:PublishReadyToRunComposite=true $(call tfm_args,$(SHAPE_TFM))
SHAPE_ARGS_aot := -p:PublishAot=true $(call tfm_args,$(SHAPE_TFM))
SHAPE_ARGS_trimmed := --self-contained -p:PublishTrimmed=true $(call tfm_args,$(SHAPE_TFM))
SHAPE_ARGS_rt8 := --self-contained $(call tfm_args,net8.0)
SHAPE_ARGS_rt9 := --self-contained $(call tfm_args,net9.0)
SHAPE_ARGS_rt11 := --self-contained -p:RuntimeFrameworkVersion=$(RT11)
SHAPE_NAMES := composite aot trimmed rt8 rt9 rt11
SHAPE_APPS := $(SHAPES)/composite/CoreLibMix/CoreLibMix \
	$(foreach s,$(SHAPE_NAMES),$(foreach a,HotChain SpanService OffCpu,$(SHAPES)/$(s)/$(a)/$(a)))
# $(SHAPES)/<shape>/<App>/<App>: $* is <shape>/<App>/<App>.
shape_of = $(firstword $(subst /, ,$(1)))
shape_app = $(word 2,$(subst /, ,$(1)))
$(SHAPE_APPS): $(SHAPES)/%: $$(call dotnet_srcs,tests/apps/$$(call shape_app,$$*)) $(HOOK_SRCS) $(wildcard hook/package/*)
	$(call msg,PUBLISH,$@ ($(call shape_of,$*)))
	$(Q)dotnet publish tests/apps/$(call shape_app,$*) -c Release -r linux-x64 -o $(@D) $(DOTNET_PROPS) \
		-p:SpanProfShape=$(call shape_of,$*) -p:SpanProfBuildDir=$(abspath $(SHAPES))/msbuild/$(call shape_of,$*) \
		$(SHAPE_ARGS_$(call shape_of,$*))
	$(Q)touch $@
shapes: $(SHAPE_APPS)

# The hook's xunit tests (tests/hook/): record encoding, slots, keys, label scopes, every disable
# path (child processes), and the ABI constants against bpf/profiler.h (compiled with $(CC)).
HOOK_TESTS := tests/hook/SpanProf.Hook.Tests/SpanProf.Hook.Tests.csproj
# After the apps when both are made: their builds of the hook project share its obj/.
# The hook's test build: SPANPROF_HOOK_FAULT compiled in (SPANPROF_TEST_FAULTS), its own obj/ and
# bin/ under $(BUILD)/testhook so that nothing of it reaches $(HOOK_DLL) or the package. The xunit
# tests and the integration tests that inject faults (hook-table.sh, otelctx.sh, hookpkg.sh) use it.
TESTHOOK_PROPS = -p:SpanProfBuildDir=$(abspath $(BUILD))/testhook -p:SpanProfTestFaults=true -nologo -v q -clp:NoSummary
TESTHOOK_DLL := $(BUILD)/testhook/hook/SpanProf.Hook.dll
$(TESTHOOK_DLL): $(HOOK_SRCS) | $(DEPS_STAMP)
	$(call msg,DOTNET,$@ (test build))
	$(Q)dotnet build hook/SpanProf.Hook.csproj -c Release $(TESTHOOK_PROPS)
	$(Q)mkdir -p $(@D) && cp $(BUILD)/testhook/bin/hook/SpanProf.Hook/Release/net6.0/SpanProf.Hook.* $(@D)/
	$(Q)touch $@
testhook: $(TESTHOOK_DLL)

hooktest: $(HOOK_DLL) | $(APP_DLLS)
	$(call msg,XUNIT,$(HOOK_TESTS))
	$(Q)CC=$(CC) dotnet test $(HOOK_TESTS) -c Release $(TESTHOOK_PROPS)

hook: $(HOOK_DLL)
pack: $(HOOK_PKG)
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
TEST_OBJS_test_rtversion = $(PERFMAP_OBJS)
# The ELF symbol reader, in four files (elfsym.c and the three it calls).
ELFSYM_SRCS := user/symbols/elfsym.c user/symbols/elffile.c user/symbols/elfehframe.c user/symbols/elfdebug.c
ELFSYM_OBJS := $(ELFSYM_SRCS:%.c=$(OBJ)/%.o)
TEST_OBJS_test_elfsym   = $(ELFSYM_OBJS) $(OBJ)/user/symbols/kallsyms.o $(LIB_OBJS)
TEST_OBJS_test_elfsym_debug = $(TEST_OBJS_test_elfsym)
TEST_OBJS_test_elfsym_hostile = $(TEST_OBJS_test_elfsym)
TEST_OBJS_test_kallsyms = $(OBJ)/user/symbols/kallsyms.o $(LIB_OBJS)
TEST_OBJS_test_spanctx  = $(TEST_OBJS_test_proctab)
TEST_OBJS_test_intern  = $(LIB_OBJS)
TEST_OBJS_test_siphash = $(LIB_OBJS)
TEST_OBJS_test_idmap   = $(LIB_OBJS)
TEST_OBJS_test_util    = $(LIB_OBJS)
TEST_OBJS_test_log     = $(LIB_OBJS)
TEST_OBJS_test_options = $(OBJ)/user/cmd/options.o $(OBJ)/user/cmd/flags.o $(LIB_OBJS)
# The command line (cmd/cli.c), with record__run and agent__run stubbed in the test.
TEST_OBJS_test_cli = $(OBJ)/user/cmd/cli.o $(TEST_OBJS_test_options)
TEST_OBJS_test_nametab = $(PERFMAP_OBJS)
TEST_OBJS_test_procfs  = $(call testbuild_objs,$(LIB_OBJS))
TEST_OBJS_test_rootfs  = $(LIB_OBJS)
TEST_OBJS_test_names   = $(PERFMAP_OBJS)
TEST_OBJS_test_blocking = $(sort $(OBJ)/user/profile/blocking.o $(TEST_OBJS_test_profile) $(PERFMAP_OBJS))
TEST_OBJS_test_r2r     = $(PERFMAP_OBJS)
TEST_OBJS_test_aotname = $(PERFMAP_OBJS)
PROCESS_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(wildcard user/process/*.c))
TEST_OBJS_test_proctab  = $(sort $(PROCESS_OBJS) $(PERFMAP_OBJS))
TEST_OBJS_test_dotnetproc = $(TEST_OBJS_test_proctab)
TEST_OBJS_test_procident = $(TEST_OBJS_test_proctab)
# The BPF session itself, on the real kernel (as root).
TEST_OBJS_test_bpfsession = $(OBJ)/user/session/bpfsession.o $(LIB_OBJS)
# The engine with its BPF session and process events faked in the test itself.
TEST_OBJS_test_engine = $(sort $(OBJ)/user/session/engine.o $(TEST_OBJS_test_aggregate) $(TEST_OBJS_test_symbolize) \
                          $(PROCESS_OBJS) $(OTELCTX_PROTO_OBJS))
# The text report (cmd/report.c) of an engine with the same fake session.
TEST_OBJS_test_report = $(sort $(OBJ)/user/cmd/report.o $(OBJ)/user/profile/blocking.o $(TEST_OBJS_test_engine))
# `spanprof record` and `agent` (cmd/record.c, cmd/agent.c) in-process on the same fake session.
TEST_OBJS_test_record = $(sort $(OBJ)/user/cmd/record.o $(OBJ)/user/cmd/command.o $(TEST_OBJS_test_report) \
                          $(TEST_OBJS_test_output))
TEST_OBJS_test_agent = $(sort $(OBJ)/user/cmd/agent.o $(OBJ)/user/export/dirout.o $(OBJ)/user/export/pyroscope.o \
                          $(OBJ)/user/export/metrics.o $(TEST_OBJS_test_report) $(TEST_OBJS_test_otlp))
TEST_OBJS_test_profile  = $(OBJ)/user/profile/profile.o $(OBJ)/user/profile/pprof.o $(OBJ)/user/profile/folded.o \
                          $(OBJ)/user/profile/flamegraph.o $(PROTO_OBJ) $(LIB_OBJS)
TEST_OBJS_test_pprof    = $(TEST_OBJS_test_profile)
TEST_OBJS_test_aggregate = $(OBJ)/user/profile/aggregate.o $(TEST_OBJS_test_profile)
TEST_OBJS_test_hashflood = $(TEST_OBJS_test_aggregate)
TEST_OBJS_test_folded   = $(TEST_OBJS_test_profile)
TEST_OBJS_test_flamegraph = $(TEST_OBJS_test_profile)
TEST_OBJS_test_pyroscope = $(OBJ)/user/export/pyroscope.o $(OBJ)/user/export/delivery.o $(TEST_OBJS_test_profile)
TEST_OBJS_test_delivery = $(TEST_OBJS_test_pyroscope)
TEST_OBJS_test_otlp     = $(OBJ)/user/export/otlp.o $(OBJ)/user/export/otlpdict.o $(OBJ)/user/export/otlpconfig.o $(OBJ)/user/export/otlpgrpc.o \
                          $(OBJ)/user/export/delivery.o $(TEST_OBJS_test_profile)
TEST_OBJS_test_otlpgrpc = $(TEST_OBJS_test_otlp)
TEST_OBJS_test_metrics  = $(OBJ)/user/export/metrics.o $(LIB_OBJS)
TEST_OBJS_test_identity = $(OBJ)/user/process/identity.o $(LIB_OBJS)
TEST_OBJS_test_talker   = $(OBJ)/user/process/talker.o
TEST_OBJS_test_pmpolicy = $(OBJ)/user/process/pmpolicy.o
TEST_OBJS_test_dotnetstubs = $(OBJ)/user/process/dotnetstubs.o $(TEST_OBJS_test_runtime)
TEST_OBJS_test_runtime  = $(OBJ)/user/process/runtime.o $(OBJ)/user/process/proctab.o $(PERFMAP_OBJS)
TEST_OBJS_test_symsrv   = $(OBJ)/user/symbols/symsrv.o $(ELFSYM_OBJS) $(LIB_OBJS)
TEST_OBJS_test_leafunwind = $(OBJ)/user/symbols/leafunwind.o $(LIB_OBJS)
TEST_OBJS_test_symbolize = $(OBJ)/user/symbols/symbolize.o $(OBJ)/user/symbols/symfiles.o \
                          $(OBJ)/user/symbols/symleaf.o $(ELFSYM_OBJS) \
                          $(OBJ)/user/symbols/symsrv.o $(OBJ)/user/symbols/leafunwind.o \
                          $(OBJ)/user/symbols/kallsyms.o $(TEST_OBJS_test_runtime)
TEST_OBJS_test_symbolize_runtime = $(TEST_OBJS_test_symbolize)
TEST_OBJS_test_output   = $(OBJ)/user/export/output.o $(TEST_OBJS_test_otlp)
TEST_OBJS_test_dirout   = $(OBJ)/user/export/dirout.o $(TEST_OBJS_test_profile)
TEST_OBJS_test_hookproc = $(OBJ)/user/process/hookproc.o $(OBJ)/user/process/spanctx.o \
                          $(TEST_OBJS_test_runtime)
# registry.o names every runtime, otelctx.o among them: whatever links it links the payload code.
TEST_OBJS_test_proctab += $(OTELCTX_PROTO_OBJS)
TEST_OBJS_test_otelctx = $(OBJ)/user/process/otelctx.o $(OBJ)/user/process/spanctx.o $(OTELCTX_PROTO_OBJS) \
                          $(TEST_OBJS_test_runtime)
TEST_OBJS_test_otelctx_read = $(TEST_OBJS_test_otelctx)

# Every test links tests/unit/testutil.c, the shared setup helpers (libc, zlib and cmocka only), and
# the sources in TEST_SRCS_X (fixtures several programs share).
TEST_SRCS_test_elfsym = tests/unit/elfsym_fx.c tests/unit/elfsym_fx.h
TEST_SRCS_test_elfsym_debug = $(TEST_SRCS_test_elfsym)
TEST_SRCS_test_elfsym_hostile = $(TEST_SRCS_test_elfsym)
TEST_SRCS_test_symbolize = tests/unit/symbolize_fx.c tests/unit/symbolize_fx.h
TEST_SRCS_test_symbolize_runtime = $(TEST_SRCS_test_symbolize)
TEST_SRCS_test_otelctx = tests/unit/otelctx_pb.c tests/unit/otelctx_pb.h
TEST_SRCS_test_otelctx_read = $(TEST_SRCS_test_otelctx)
TEST_SRCS_test_engine = tests/unit/engine_fx.c tests/unit/engine_fx.h
TEST_SRCS_test_report = $(TEST_SRCS_test_engine)
TEST_SRCS_test_record = $(TEST_SRCS_test_engine)
TEST_SRCS_test_agent = $(TEST_SRCS_test_engine)
$(BUILD)/tests/%: tests/unit/%.c tests/unit/testutil.c tests/unit/testutil.h $$(TEST_SRCS_$$*) \
		$$(if $$(TEST_OBJS_$$*),$$(TEST_OBJS_$$*),$$(ALL_OBJS)) | $(BUILD)/gen/profile.pb-c.h
	$(call msg,TEST,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(LDFLAGS) $(filter-out %.h,$^) $(LDLIBS) -lcmocka -o $@

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
NATIVE_APPS := $(BUILD)/apps/native/hotchain $(BUILD)/apps/native/forged_table \
               $(BUILD)/apps/native/forged_stacks $(BUILD)/apps/native/many_maps \
               $(BUILD)/apps/native/fake_dotnet $(BUILD)/apps/native/leafcall \
               $(BUILD)/apps/native/exec_a $(BUILD)/apps/native/exec_b $(BUILD)/apps/native/fusehang \
               $(BUILD)/apps/native/memfd_flood $(BUILD)/apps/native/pingpong \
               $(BUILD)/apps/native/placechurn
$(BUILD)/apps/native/hotchain: tests/apps/native/hotchain.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O0 -g -fno-omit-frame-pointer $(WARN) $< -o $@
# -O2 on purpose: its hot leaf has no frame (see leafcall.c).
$(BUILD)/apps/native/leafcall: tests/apps/native/leafcall.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fno-omit-frame-pointer $(WARN) $< -o $@
# The same code at the same fixed address twice (-no-pie), under other names: see execer.c.
$(BUILD)/apps/native/exec_a $(BUILD)/apps/native/exec_b: $(BUILD)/apps/native/exec_%: tests/apps/native/execer.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -no-pie -DSTAGE=$(if $(filter a,$*),1,2) $(WARN) $< -o $@
$(BUILD)/apps/native/many_maps $(BUILD)/apps/native/fake_dotnet $(BUILD)/apps/native/fusehang: \
		$(BUILD)/apps/native/%: tests/apps/native/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -g $(WARN) $< -o $@
$(BUILD)/apps/native/pingpong $(BUILD)/apps/native/placechurn: $(BUILD)/apps/native/%: \
		tests/apps/native/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -pthread $(WARN) $< -o $@
$(BUILD)/apps/native/forged_stacks: tests/apps/native/forged_stacks.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -g $(WARN) $< -o $@
$(BUILD)/apps/native/forged_table $(BUILD)/apps/native/memfd_flood: $(BUILD)/apps/native/%: \
		tests/apps/native/%.c bpf/profiler.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -Ibpf -O1 -g $(WARN) $< -o $@

tools: $(TOOLS) $(NATIVE_APPS) $(BUILD)/spanprof-test $(TESTHOOK_DLL)

# Every unit program, whatever fails, each under its deadline; one summary line (tests/run-all.sh).
unit: $(TESTS)
	$(Q)BUILD=$(BUILD) SUITES=unit ./tests/run-all.sh

# ---- fuzz ----------------------------------------------------------------------------------
# Every tests/fuzz/fuzz_X.c is a libFuzzer target (clang, ASan+UBSan) built with the sources in
# FUZZ_SRCS_fuzz_X (each compiled once into $(BUILD)/fuzz/obj) and linked with FUZZ_LIBS_fuzz_X;
# its corpus is tests/fuzz/corpus/X (small seeds kept in git, crash regressions) plus the seeds
# make_seeds.py writes to $(BUILD)/fuzz/seeds/X. A new target is its .c file and one
# FUZZ_SRCS_ line. `make fuzz` builds them, `make fuzzcheck` (part of `make test`) runs each over
# its corpus plus FUZZ_CHECK_RUNS mutations, `make fuzz-run` runs each for FUZZ_TIME seconds
# (FUZZ_TARGETS=fuzz_X picks some; FUZZ_ARGS adds libFuzzer flags, e.g. -runs=10000000).
# The ReadyToRun reader, in five files (r2r.c and the four it calls; composite images in
# r2rcomposite.c, which opens component assemblies with lib/rootfs.c).
R2R_SRCS     := perfmap/r2r.c perfmap/pe.c perfmap/ecma335.c perfmap/r2rnames.c perfmap/r2rcomposite.c
PERFMAP_CORE := perfmap/perfmap.c perfmap/jitdump.c perfmap/addrindex.c perfmap/addrlookup.c $(R2R_SRCS) lib/intern.c lib/nametab.c lib/hexnum.c lib/symbudget.c lib/prefault.c lib/util.c lib/log.c lib/utf8.c lib/rootfs.c \
                lib/siphash.c
PERFMAP_CORE_HDRS := perfmap/perfmap.h perfmap/perfmap_int.h perfmap/addrindex.h perfmap/addrindex_int.h perfmap/r2r.h perfmap/r2r_int.h lib/intern.h lib/nametab.h lib/hexnum.h lib/symbudget.h lib/prefault.h lib/util.h lib/log.h lib/utf8.h lib/rootfs.h \
                     lib/siphash.h
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_OBJ    := $(BUILD)/fuzz/obj
FUZZ_ALL    := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_TIME   ?= 600
FUZZ_CHECK_RUNS ?= 4000
FUZZ_RUN    = -rss_limit_mb=2048 -artifact_prefix=$(BUILD)/fuzz/artifacts/$(1)- -print_final_stats=1
# In a shell loop over t: the seed directories of target $t (a target without any starts empty).
FUZZ_CORPUS = $$(ls -d $(BUILD)/fuzz/seeds/$${t\#fuzz_} tests/fuzz/corpus/$${t\#fuzz_} 2>/dev/null)
OTELCTX_GEN := $(patsubst $(BUILD)/obj/gen/%.o,$(BUILD)/gen/%.c,$(OTELCTX_PROTO_OBJS))

FUZZ_SRCS_fuzz_perfmap   = $(PERFMAP_CORE)
FUZZ_SRCS_fuzz_jitdump   = $(PERFMAP_CORE)
FUZZ_SRCS_fuzz_r2r       = $(R2R_SRCS) $(LIB_SRCS)
FUZZ_SRCS_fuzz_r2rcomposite = $(R2R_SRCS) $(LIB_SRCS)
FUZZ_SRCS_fuzz_kallsyms  = user/symbols/kallsyms.c $(LIB_SRCS)
FUZZ_LIBS_fuzz_kallsyms  = -lz
FUZZ_SRCS_fuzz_elfsym    = $(ELFSYM_SRCS) $(LIB_SRCS)
FUZZ_LIBS_fuzz_elfsym    = -ldw -lelf -lz -lstdc++
FUZZ_SRCS_fuzz_diagipc   = perfmap/diagipc.c perfmap/dotnet.c $(LIB_SRCS)
FUZZ_LIBS_fuzz_diagipc   = -lpthread
FUZZ_SRCS_fuzz_procfs    = perfmap/dotnet.c user/process/proctab.c user/process/runtime.c user/process/identity.c \
                           user/process/spanctx.c $(LIB_SRCS)
FUZZ_SRCS_fuzz_spantable = user/process/hookproc.c user/process/spanctx.c user/process/proctab.c \
                           user/process/runtime.c $(LIB_SRCS)
FUZZ_LIBS_fuzz_spantable = -lbpf
FUZZ_SRCS_fuzz_otelctx   = user/process/otelctx.c user/process/spanctx.c user/process/proctab.c \
                           user/process/runtime.c $(OTELCTX_GEN) $(LIB_SRCS)
FUZZ_LIBS_fuzz_otelctx   = -lprotobuf-c

.PRECIOUS: $(FUZZ_OBJ)/%.o
fuzz_objs = $(patsubst %.c,$(FUZZ_OBJ)/%.o,$(FUZZ_SRCS_$(1)))

$(FUZZ_OBJ)/%.o: %.c | $(GEN_HDRS)
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(CPPFLAGS) \
		$(if $(filter $(BUILD)/%,$<),,$(WARN)) -MMD -MP -c $< -o $@

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $$(call fuzz_objs,fuzz_$$*) | $(GEN_HDRS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(CPPFLAGS) $(WARN) $< \
		$(call fuzz_objs,fuzz_$*) $(FUZZ_LIBS_fuzz_$*) -o $@

-include $(shell find $(FUZZ_OBJ) -name '*.d' 2>/dev/null)

FUZZ_SEEDS := $(BUILD)/fuzz/seeds/.stamp
$(FUZZ_SEEDS): tests/fuzz/make_seeds.py $(wildcard tests/fixtures/*/*)
	$(call msg,SEEDS,$(@D))
	$(Q)rm -rf $(@D) && CC=$(CC) python3 tests/fuzz/make_seeds.py $(@D)
	$(Q)touch $@

fuzz: $(FUZZ_ALL:%=$(BUILD)/fuzz/%) $(FUZZ_SEEDS)

# Each target briefly: its seeds, then mutations of them; new inputs go to a scratch directory,
# never into the corpus. A crash, leak or sanitizer report fails the build.
fuzzcheck: fuzz
	$(Q)set -e; mkdir -p $(BUILD)/fuzz/artifacts; for t in $(FUZZ_TARGETS); do \
		printf '  %-8s %s\n' FUZZCHK $$t; rm -rf $(BUILD)/fuzz/scratch; mkdir -p $(BUILD)/fuzz/scratch; \
		$(BUILD)/fuzz/$$t $(call FUZZ_RUN,$$t) -runs=$(FUZZ_CHECK_RUNS) $(BUILD)/fuzz/scratch \
			$(FUZZ_CORPUS) >$(BUILD)/fuzz/$$t.log 2>&1 || \
			{ tail -40 $(BUILD)/fuzz/$$t.log >&2; exit 1; }; \
	done

# A long campaign, one target at a time; the growing corpus is kept in $(BUILD)/fuzz/corpus-X.
fuzz-run: fuzz
	$(Q)set -e; mkdir -p $(BUILD)/fuzz/artifacts; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(BUILD)/fuzz/corpus-$${t#fuzz_}; echo "== $$t"; \
		$(BUILD)/fuzz/$$t $(call FUZZ_RUN,$$t) -max_total_time=$(FUZZ_TIME) $(FUZZ_ARGS) \
			$(BUILD)/fuzz/corpus-$${t#fuzz_} $(FUZZ_CORPUS); \
	done

# ---- bench (perfmap) ------------------------------------------------------------------------
$(BUILD)/bench/bench_perfmap: tests/bench/bench_perfmap.c $(PERFMAP_CORE) $(PERFMAP_CORE_HDRS)
	$(call msg,BENCH,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -D_GNU_SOURCE -Iperfmap -Ilib -O2 -g $(WARN) $< $(PERFMAP_CORE) -o $@

$(BUILD)/bench/bench_syscall: tests/bench/bench_syscall.c
	$(call msg,BENCH,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g $(WARN) $< -o $@

# ELF symbol tables: load and lookup on real libraries (the figures test_elfsym printed once).
$(BUILD)/bench/bench_elfsym: tests/bench/bench_elfsym.c $(TEST_OBJS_test_elfsym)
	$(call msg,BENCH,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $^ $(LDLIBS) -o $@

# The tables' hash (lib/siphash.c) against the former unkeyed one, and lookups in the per-sample
# tables.
BENCH_HASH_SRCS := lib/siphash.c lib/intern.c lib/idmap.c lib/prefault.c lib/util.c lib/log.c lib/utf8.c
$(BUILD)/bench/bench_hash: tests/bench/bench_hash.c $(BENCH_HASH_SRCS) $(BENCH_HASH_SRCS:.c=.h)
	$(call msg,BENCH,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -D_GNU_SOURCE -Ilib -O2 -g $(WARN) $< $(BENCH_HASH_SRCS) -o $@

.PHONY: fuzz fuzzcheck fuzz-run

# ---- top-level targets ---------------------------------------------------------------------
all: $(BUILD)/spanprof $(HOOK_DLL) $(HOOK_PKG)

# Builds everything, then tests/run-all.sh runs every suite (each test under a deadline), whatever
# fails, and ends with one line "tests: N passed, N failed, N skipped".
test: all apps tools $(TESTS) fuzz
	$(Q)BUILD=$(BUILD) ./tests/run-all.sh

# The frame and span tests over every shape .NET ships in (make shapes): framework-dependent,
# composite ReadyToRun, Native AOT, trimmed, self-contained on runtimes 8, 9 and 11 (tests/matrix.sh;
# MATRIX_SHAPES="rt11 aot" picks shapes), ending with the table of every cell
# ($(BUILD)/matrix/table.md). `make test` runs the framework-dependent cases and skips the shapes.
test-matrix: all apps tools shapes
	$(Q)BUILD=$(BUILD) ./tests/matrix.sh

print-fuzz-targets:
	@echo $(FUZZ_TARGETS)

demo: all apps
	$(Q)BUILD=$(BUILD) ./scripts/demo.sh

bench: all apps tools $(BUILD)/bench/bench_perfmap $(BUILD)/bench/bench_syscall $(BUILD)/bench/bench_hash \
	$(BUILD)/bench/bench_elfsym
	$(Q)BUILD=$(BUILD) ./scripts/bench.sh

clean:
	rm -rf $(BUILD)

.PHONY: all deps hook pack testhook hooktest apps shapes test-matrix tools unit test demo bench clean print-fuzz-targets
.DEFAULT_GOAL := all
