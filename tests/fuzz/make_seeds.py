#!/usr/bin/env python3
"""make_seeds.py: write the seed corpora of the fuzz targets: make_seeds.py [OUTDIR].

OUTDIR/<target>/ gets a few valid and a few broken inputs per target; `make fuzz` runs it into
build/fuzz/seeds/ (never committed); the ELF seeds are built with $CC. Without OUTDIR only the
perfmap and jitdump corpora kept in git (tests/fuzz/corpus/) are rewritten. perfmap/jitdump seeds start with the 3 control bytes those targets read (config,
split seed); their names are shaped like the ones .NET 10.0.12 writes (checked on this machine;
see perfmap/README.md).
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")
FIXTURES = os.path.join(HERE, "..", "fixtures", "perfmap")
NAMES = [
    "int32 [App] Program::Fresh3(int32)[QuickJitted]",
    "int32 [App] Program::Fresh3(int32)[OptimizedTier1]",
    "int64 [App] Program::HotLoop(int64)[OptimizedTier1OSR]",
    "instance void [System.Linq] System.Linq.Enumerable+RangeIterator`1[System.Int32]::.ctor(!0,!0)[QuickJitted]",
    "int32 [Anonymously Hosted DynamicMethods Assembly] dynamicClass::lambda_method1(System.Runtime.CompilerServices.Closure /* MT: 0x7f1c9113b950 */,int32)[Optimized]",
    "void [System.Private.CoreLib] System.Runtime.CompilerServices.AsyncTaskMethodBuilder`1[System.Int32]::AwaitUnsafeOnCompleted(!!0&,class System.Runtime.CompilerServices.IAsyncStateMachineBox)[InstrumentedTierOptimized]",
    "void [System.Private.CoreLib] System.AppContext::Setup(char**,char**,int32)[PreJIT]",
    "stub ReportStubBlock<MethodCallThunk>",
    "stub CreateHelper<DynamicHelper>",
    "stub<12> Allocate<FixupPrecode>",
    "instance bool [System.Private.CoreLib] System.Threading.ThreadPoolWorkQueue::Dequeue(class System.Threading.ThreadPoolWorkQueueThreadLocals,object&)[MinOptJitted]",
]


def write(kind, name, data):
    os.makedirs(os.path.join(OUT, kind), exist_ok=True)
    with open(os.path.join(OUT, kind, name), "wb") as f:
        f.write(data)


def perfmap_seeds():
    lines = []
    addr = 0x7F339FC83290
    for i, n in enumerate(NAMES):
        lines.append("0x%x %x %s\n" % (addr, 0x40 + i * 8, n))
        addr += 0x100
    text = "".join(lines).encode()
    write("perfmap", "names", b"\x00\x01\x02" + text)
    write("perfmap", "names-small-caps", b"\x01\x07\x00" + text)
    write("perfmap", "names-byte-feeds", b"\x04\x33\x00" + text)
    write("perfmap", "mixed-jitdump", b"\x02\x09\x00" + text)
    overlap = (b"1000 100 stub ReportStubBlock<Unknown>\n1010 10 stub CreateHelper<DynamicHelper>\n"
               b"1010 12 stub CreateHelperArgMove<DynamicHelper>\n2000 10 a\n2000 10 b[QuickJitted]\n"
               b"2008 40 c[OptimizedTier1]\n")
    write("perfmap", "overlap", b"\x00\x05\x00" + overlap)
    bad = (b"zz 10 x\n1000 0 zero\n1000  \n(nil) 10 null\n1000 10\n"
           b"ffffffffffffffff 10 wrap\n12345678901234567 1 long\n1000\t10\tnotab\r\n"
           b"1000 10 nul\x00inside\n" + b"2000 10 " + b"x" * 200 + b"\n2100 10 partial")
    write("perfmap", "malformed", b"\x01\x03\x00" + bad)
    with open(os.path.join(FIXTURES, "perf-10.0.12.map"), "rb") as f:
        write("perfmap", "real-10.0.12", b"\x00\x11\x00" + f.read())


def jd_header(swap=False, flags=0, size=40):
    fmt = ">IIIIIIQQ" if swap else "<IIIIIIQQ"
    h = struct.pack(fmt, 0x4A695444, 1, size, 62, 0, 4242, 1000, flags)
    return h + b"\0" * (size - 40)


def jd_load(addr, size, name, ts, idx, swap=False, code=True):
    e = ">" if swap else "<"
    body = struct.pack(e + "IIQQQQ", 4242, 4243, addr, addr, size, idx) + name.encode() + b"\0"
    if code:
        body += bytes((i * 7) & 0xFF for i in range(size))
    return struct.pack(e + "IIQ", 0, 16 + len(body), ts) + body


def jd_other(rid, payload, ts, swap=False):
    e = ">" if swap else "<"
    return struct.pack(e + "IIQ", rid, 16 + len(payload), ts) + payload


def jitdump_seeds():
    recs = b""
    addr = 0x7F1C90874000
    for i, n in enumerate(NAMES):
        recs += jd_load(addr + i * 0x100, 0x30 + i, n, 2000 + i * 10, i + 1)
    recs += jd_other(2, b"\x01" * 24, 3000)          # JIT_CODE_DEBUG_INFO: skipped
    recs += jd_load(addr, 0x30, NAMES[1], 4000, 99)  # same range reused later
    write("jitdump", "valid", b"\x00\x01\x00" + jd_header() + recs)
    write("jitdump", "valid-byte-feeds", b"\x04\x02\x00" + jd_header() + recs)
    write("jitdump", "records-only", b"\x02\x03\x00" + recs)
    write("jitdump", "records-small-caps", b"\x03\x03\x00" + recs)
    write("jitdump", "twin-with-map", b"\x12\x05\x00" + jd_load(0x1000, 0x10, "int32 [App] Program::Fresh0(int32)[QuickJitted]", 5, 1))
    swapped = b"".join(jd_load(addr + i * 0x100, 0x20, n, 100 + i, i, swap=True) for i, n in enumerate(NAMES[:4]))
    write("jitdump", "swapped", b"\x00\x07\x00" + jd_header(swap=True) + swapped)
    write("jitdump", "swapped-records", b"\x0a\x07\x00" + swapped)
    write("jitdump", "arch-timestamp", b"\x00\x08\x00" + jd_header(flags=1) + recs[:400])
    write("jitdump", "big-header", b"\x00\x09\x00" + jd_header(size=64) + recs[:300])
    trunc = jd_header() + jd_load(addr, 0x10000, "stub ReportStubBlock<Unknown>", 7, 2)[:5000]
    write("jitdump", "truncated-stub-block", b"\x00\x0a\x00" + trunc)
    bad = jd_header() + struct.pack("<IIQ", 0, 8, 1) + recs
    write("jitdump", "bad-size", b"\x00\x0b\x00" + bad)
    nonul = jd_header() + struct.pack("<IIQ", 0, 16 + 40 + 4, 1) + b"\0" * 40 + b"abcd"
    write("jitdump", "name-no-nul", b"\x00\x0c\x00" + nonul)
    with open(os.path.join(FIXTURES, "jit-10.0.12-stubblock.dump"), "rb") as f:
        write("jitdump", "real-10.0.12-stubblock", b"\x00\x0d\x00" + f.read())


def kallsyms_seeds():
    text = (b"ffffffff81000000 T _stext\nffffffff81000000 T _text\nffffffff81000010 t helper\n"
            b"ffffffff81000040 W weak_fn\nffffffff81000080 T do_syscall_64\n"
            b"ffffffff81001000 D some_data\nffffffff81002000 b bss_thing\n"
            b"ffffffffc0000000 t ext4_readpage\t[ext4]\nffffffffc0000100 T ext4_write\t[ext4]\n"
            b"ffffffffc0100000 t bpf_prog_6deef7357e7b4530_foo\t[bpf]\n"
            b"ffffffffc0200000 T __builtin__ftrace_caller\t[__builtin__ftrace]\n")
    write("kallsyms", "text", text)
    write("kallsyms", "no-final-newline", text.rstrip(b"\n"))
    write("kallsyms", "hidden", b"0000000000000000 T _stext\n0000000000000000 t helper\n")
    write("kallsyms", "malformed", b"zz T x\nffffffff81000000\nffffffff81000000 T\n"
          b"ffffffff81000000 Q q\n12345678901234567 T long\nffffffff81000000 T a [unterminated\n"
          b"ffffffff81000000 T " + b"n" * 1100 + b"\n")
    # A real slice of this machine's table, when it is readable (as root).
    try:
        with open("/proc/kallsyms", "rb") as f:
            head = f.read(2000)
        head = head[: head.rfind(b"\n") + 1]
        if head and not head.startswith(b"0000000000000000"):
            write("kallsyms", "real-head", head)
    except OSError:
        pass


def proc_file(name, cap=4000):
    """A real file of this process, cut to whole lines within cap bytes; b"" when unreadable.
    Never environ: it may hold secrets."""
    try:
        with open("/proc/self/" + name, "rb") as f:
            data = f.read(cap + 1)
    except OSError:
        return b""
    if len(data) > cap:
        data = data[: data.rfind(b"\n", 0, cap) + 1]
    return data


K8S_UID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
K8S_CID = "a" * 64


def procfs_seeds():
    maps = (b"55d0c0a00000-55d0c0a21000 r-xp 00000000 fd:01 1234   /usr/bin/dotnet\n"
            b"7f1c90000000-7f1c90400000 rwxp 00000000 00:01 99     /memfd:doublemapper (deleted)\n"
            b"7f1c91000000-7f1c91001000 rw-s 00000000 00:01 77     /memfd:spanprof-ctx (deleted)\n"
            b"7f1c92000000-7f1c92001000 r--p 00000000 00:01 78     /memfd:OTEL_CTX (deleted)\n"
            b"7f1c93000000-7f1c93800000 r-xp 00010000 fd:01 5678   /usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.12/libcoreclr.so\n"
            b"7f1c94000000-7f1c94001000 rw-p 00000000 00:00 0      [anon:OTEL_CTX]\n"
            b"7ffd1a000000-7ffd1a021000 rw-p 00000000 00:00 0      [stack]\n"
            b"7ffd1a100000-7ffd1a102000 r-xp 00000000 00:00 0      [vdso]\n"
            b"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]")
    write("procfs", "maps", b"\x00" + maps)
    write("procfs", "maps-real", b"\x00" + proc_file("maps"))
    write("procfs", "maps-bad", b"\x00" + b"zz-10 r-xp 0 0:0 0 /x\n20-10 r-xp 0 0:0 0 /rev\n10-20\n"
          b"10-20 r-x\n10-20 r-xp 0 0:0 0 /memfd:spanprof-ctx\n10-20 r-xp 0 0:0 0 /memfd:spanprof-ctx\n")
    status = proc_file("status") or b"Name:\tdotnet\nTgid:\t4242\nNStgid:\t4242\t7\nUid:\t0\t0\t0\t0\n"
    write("procfs", "status-real", b"\x01" + status)
    write("procfs", "status-nested", b"\x01Name:\tx\nTgid:\t9\nNStgid:\t9\t8\t7\nUid:\t1\t2\t3\t4\n")
    write("procfs", "status-old", b"\x01Name:\tx\nTgid:\t9\n")
    stat = proc_file("stat")
    write("procfs", "stat-real", b"\x02" + stat)
    write("procfs", "stat-parens", b"\x02" + b"4242 (a) (b) ) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 "
          b"123456 20 21\n")
    env = (b"PATH=/usr/bin\0TMPDIR=/var/tmp\0DOTNET_PerfMapJitDumpPath=/tmp/jit\0"
           b"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod,service.name=shop%20api\0"
           b"OTEL_SERVICE_NAME=\0A=b\0")
    write("procfs", "environ", b"\x03" + env)
    write("procfs", "environ-service", b"\x03OTEL_SERVICE_NAME=checkout\0TMPDIR=\0")
    write("procfs", "environ-bad-attrs", b"\x03OTEL_RESOURCE_ATTRIBUTES=service.name=%zz,=x,,a\0")
    cg = [
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/"
        "cri-containerd-%s.scope\n" % (K8S_UID.replace("-", "_"), K8S_CID),
        "12:memory:/kubepods/besteffort/pod%s/%s\n11:name=systemd:/kubepods/besteffort/pod%s\n"
        % (K8S_UID, K8S_CID, K8S_UID),
        "0::/../kubepods-pod%s.slice/crio-%s.scope\n" % (K8S_UID.replace("-", "_"), K8S_CID),
        "0::/docker/%s\n1:cpu:/kubepods/pod%s/docker-%s.scope\n" % (K8S_CID, "f" * 32, K8S_CID),
        "0::/user.slice/user-1000.slice/session-2.scope\n",
    ]
    for i, c in enumerate(cg):
        write("procfs", "cgroup-%d" % i, b"\x04" + c.encode())
    whole = b"\n#%#\n".join([stat or b"4242 (dotnet) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99 20\n",
                               status, maps, env, cg[0].encode()])
    write("procfs", "process", b"\x05" + whole)
    write("procfs", "process-real", b"\x05" + b"\n#%#\n".join([stat, status, proc_file("maps", 3000), env,
                                                                 proc_file("cgroup")]))


def diag_msg(cset, cid, payload=b"", size=None):
    """A diagnostics IPC message (dotnet/runtime ds-protocol.c): magic, u16 size, set, id, u16 0."""
    return (b"DOTNET_IPC_V1\0" + struct.pack("<HBBH", 20 + len(payload) if size is None else size,
                                             cset, cid, 0) + payload)


def diagipc_seeds():
    # data[0]: 0 parse from a buffer, 1 a socket name, 2 the reply over a socket; data[1]: nspid.
    ok = diag_msg(0xFF, 0x00, struct.pack("<I", 0))
    err = diag_msg(0xFF, 0xFF, struct.pack("<I", 0x80131385))
    for mode in (0, 2):
        write("diagipc", "ok-%d" % mode, bytes([mode, 7]) + ok)
        write("diagipc", "error-%d" % mode, bytes([mode, 7]) + err)
        write("diagipc", "long-%d" % mode, bytes([mode, 7]) + diag_msg(0xFF, 0x00, b"\0" * 12))
        write("diagipc", "short-%d" % mode, bytes([mode, 7]) + ok[:22])
        write("diagipc", "bad-size-%d" % mode, bytes([mode, 7]) + diag_msg(0xFF, 0, b"\0" * 4, 8))
        write("diagipc", "request-%d" % mode, bytes([mode, 7]) + diag_msg(0x04, 0x05, struct.pack("<I", 3)))
    for i, name in enumerate([b"dotnet-diagnostic-7-12345-socket", b"dotnet-diagnostic-7-18446744073709551615-socket",
                              b"dotnet-diagnostic-7-18446744073709551616-socket", b"dotnet-diagnostic-07-1-socket",
                              b"dotnet-diagnostic-7--socket", b"dotnet-diagnostic-70-1-socket",
                              b"libcoreclr.so (deleted)"]):
        write("diagipc", "name-%d" % i, b"\x01\x07" + name)


def span_record(trace, span, attrs, valid=1, flags=1):
    """An OTEP 4947 record: trace_id[16] span_id[8] valid flags attrs_size:u16, {key, len, value}."""
    body = b"".join(bytes([k, len(v)]) + v for k, v in attrs)
    return trace + span + bytes([valid, flags]) + struct.pack("<H", len(body)) + body


def span_table(slot_count=8, slot_size=256, keys=(b"tenant", b"region", b"pid"), records=(),
               pid=0, flags=0, keys_off=128, slots_off=4096, magic=b"SPANPROF", abi=1):
    """A hook ABI v1 table (bpf/profiler.h: struct sp_ctx_header, slots of sp_slot_head + record)."""
    table = bytearray(slots_off + slot_count * slot_size)
    ktab = b"".join(bytes([len(k)]) + k for k in keys)
    struct.pack_into("<8sIIIIIIIIIIQQQQ", table, 0, magic, abi, 80, slot_count, slot_size,
                     slots_off, keys_off, 1024, len(keys), pid, flags, 1700000000 * 10**9, 3, 0, 0)
    table[keys_off:keys_off + len(ktab)] = ktab
    for i, rec in enumerate(records):
        off = slots_off + i * slot_size
        struct.pack_into("<IIQ", table, off, 1000 + i, 0, 12345)
        rec = rec[: slot_size - 16]
        table[off + 16:off + 16 + len(rec)] = rec
    return bytes(table)


def spantable_seeds():
    # data[0]: bit 0 a lone record, bit 1 patch the header's pid to the fuzzer's; data[1]: pages - 1.
    trace = bytes(range(1, 17))
    span = bytes(range(0x10, 0x18))
    recs = [span_record(trace, span, [(0, b"00f067aa0ba902b7"), (1, b"GET /orders"), (2, b"acme"),
                                      (3, b"eu-west-1")]),
            span_record(b"\0" * 16, b"\0" * 8, [(2, b"labels-outside-a-span")]),
            span_record(trace, span, [(0, b"00F067AA0BA902B7"), (4, b"x"), (2, b"\xff\xfe bad utf-8")]),
            span_record(trace, span, [(2, b"a"), (2, b"again")], valid=0),
            span_record(trace, span, [(1, b"cut")])[:-2] + b"\xff\x7f",
            span_record(trace, span, [(9, b"unknown key")])]
    write("spantable", "table", b"\x02\x01" + span_table(records=recs))
    write("spantable", "table-small-slots", b"\x02\x01" + span_table(slot_count=64, slot_size=48,
                                                                      records=recs))
    write("spantable", "table-big-slots", b"\x02\x03" + span_table(slot_count=2, slot_size=4096,
                                                                    records=recs[:2]))
    write("spantable", "table-disabled", b"\x02\x01" + span_table(records=recs[:1], flags=1))
    write("spantable", "table-other-pid", b"\x00\x01" + span_table(records=recs[:1], pid=1))
    write("spantable", "table-abi2", b"\x02\x01" + span_table(abi=2))
    write("spantable", "table-unpublished", b"\x02\x01" + span_table(magic=b"\0" * 8))
    write("spantable", "table-keys-overlap", b"\x02\x01" + span_table(keys_off=4000))
    ktab = bytes([3]) + b"".join(bytes([len(k)]) + k for k in (b"tenant", b"region", b"x" * 255))
    for i, r in enumerate(recs):
        write("spantable", "record-%d" % i, b"\x01\x00" + r + b"\0" * (656 - len(r)) + ktab)


def pb_varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def pb_field(num, wire, payload):
    if wire == 0:
        return pb_varint(num << 3) + pb_varint(payload)
    if wire == 1:
        return pb_varint(num << 3 | 1) + struct.pack("<d", payload)
    return pb_varint(num << 3 | 2) + pb_varint(len(payload)) + payload


def pb_any(v):
    """opentelemetry.proto.common.v1.AnyValue of a Python value."""
    if isinstance(v, bool):
        return pb_field(2, 0, int(v))
    if isinstance(v, int):
        return pb_field(3, 0, v & (2**64 - 1))
    if isinstance(v, float):
        return pb_field(4, 1, v)
    if isinstance(v, bytes):
        return pb_field(7, 2, v)
    if isinstance(v, list):
        return pb_field(5, 2, b"".join(pb_field(1, 2, pb_any(x)) for x in v))
    if isinstance(v, dict):
        return pb_field(6, 2, b"".join(pb_field(1, 2, pb_kv(k, x)) for k, x in v.items()))
    return pb_field(1, 2, v.encode())


def pb_kv(key, value):
    return pb_field(1, 2, key.encode()) + pb_field(2, 2, pb_any(value))


def process_context(resource, attrs):
    """ProcessContext (processcontext/v1development): resource = 1 (Resource.attributes = 1),
    attributes = 2."""
    res = b"".join(pb_field(1, 2, pb_kv(k, v)) for k, v in resource.items())
    return pb_field(1, 2, res) + b"".join(pb_field(2, 2, pb_kv(k, v)) for k, v in attrs.items())


def otelctx_seeds():
    # data[0]: bit 0 the payload alone; else header + payload, with bit 1 the payload pointer,
    # bit 2 the payload size patched in, bit 3 a span table mapped too.
    resource = {"service.name": "checkout", "service.version": "1.2.3", "host.name": "node-1",
                "process.pid": 4242, "deployment.environment.name": "prod", "sampled": True,
                "ratio": 0.25, "blob": b"\x00\x01", "list": ["a", 1], "bad utf-8": "\udcff".encode(
                    "utf-8", "surrogateescape").decode("latin-1")}
    attrs = {"threadlocal.schema_version": "tlsdesc_v1_dev",
             "threadlocal.attribute_key_map": ["local_root_span_id", "span_name", "tenant", "region"]}
    full = process_context(resource, attrs)
    write("otelctx", "payload", b"\x01" + full)
    write("otelctx", "payload-map-in-resource", b"\x01" + process_context(dict(resource, **attrs), {}))
    write("otelctx", "payload-bad-map", b"\x01" + process_context({}, {
        "threadlocal.attribute_key_map": ["a", 3, {"k": "v"}]}))
    write("otelctx", "payload-nested", b"\x01" + process_context({"deep": [[[[["x"]]]]]}, {}))
    write("otelctx", "payload-long-value", b"\x01" + process_context({"service.name": "\u00e9" * 700}, {}))
    write("otelctx", "payload-dup-keys", b"\x01" + pb_field(1, 2, pb_field(1, 2, pb_kv("a", "1")) +
                                                             pb_field(1, 2, pb_kv("a", "2"))))
    for cfg, name, payload in ((0x0E, "read", full), (0x06, "read-no-table", full),
                               (0x0E, "read-mismatch", process_context({}, {
                                   "threadlocal.attribute_key_map": ["x", "y", "tenant"]}))):
        hdr = struct.pack("<8sIIQQ", b"OTEL_CTX", 2, len(payload), 1700000000 * 10**9, 0)
        write("otelctx", name, bytes([cfg]) + hdr + payload)
    write("otelctx", "read-v1", b"\x06" + struct.pack("<8sIIQQ", b"OTEL_CTX", 1, 0, 1, 0))
    write("otelctx", "read-writing", b"\x06" + struct.pack("<8sIIQQ", b"OTEL_CTX", 2, 0, 0, 0) + full)
    write("otelctx", "read-too-big", b"\x02" + struct.pack("<8sIIQQ", b"OTEL_CTX", 2, 2 << 20, 1, 0))
    write("otelctx", "read-null-ptr", b"\x04" + struct.pack("<8sIIQQ", b"OTEL_CTX", 2, 4, 1, 0) + full)


def r2rcomposite_seeds():
    """The composite fixture (tests/fixtures/r2r-composite), whole and cut, as fuzz_r2rcomposite
    reads it: u32 composite length, u32 CompApp.dll length, the three files."""
    d = os.path.join(HERE, "..", "fixtures", "r2r-composite")
    comp, app, lib = (open(os.path.join(d, n), "rb").read() for n in ("CompApp.r2r.dll", "CompApp.dll", "Lib.dll"))
    write("r2rcomposite", "whole", struct.pack("<II", len(comp), len(app)) + comp + app + lib)
    write("r2rcomposite", "no-lib", struct.pack("<II", len(comp), len(app)) + comp + app)
    for cut in (512, 2048, len(comp) // 2):
        write("r2rcomposite", "cut-%d" % cut, struct.pack("<II", cut, len(app)) + comp[:cut] + app + lib)


def elfsym_seeds():
    """Small real ELF files, built from the test_elfsym fixtures with $CC (none when it fails)."""
    cc = os.environ.get("CC", "cc")
    src = os.path.join(HERE, "..", "fixtures", "elf")
    small = ["-O1", "-Wl,-z,max-page-size=4096", "-Wl,-z,noseparate-code"]
    tmp = tempfile.mkdtemp(prefix="make_seeds.")
    try:
        def build(name, flags, source):
            out = os.path.join(tmp, name)
            subprocess.run([cc] + flags + small + ["-o", out, os.path.join(src, source)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return out

        def tool(*args):
            subprocess.run(list(args), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        lib = build("fx_lib.so", ["-fPIC", "-shared", "-nostdlib", "-Wl,--build-id=sha1"], "fx_lib.c")
        build("fx_lib_nobid.so", ["-fPIC", "-shared", "-nostdlib", "-Wl,--build-id=none"], "fx_lib.c")
        build("fx_pie", ["-fPIE", "-pie"], "fx_main.c")
        dbg, stripped, linked = (os.path.join(tmp, n) for n in ("fx_lib.debug", "fx_stripped.so", "fx_dl.so"))
        tool("strip", "--strip-all", "-o", stripped, lib)
        tool("objcopy", "--only-keep-debug", lib, dbg)
        tool("objcopy", "--strip-debug", "--strip-unneeded", "--add-gnu-debuglink=" + dbg, lib, linked)
        for name in sorted(os.listdir(tmp)):
            with open(os.path.join(tmp, name), "rb") as f:
                write("elfsym", name, f.read())
    except (OSError, subprocess.CalledProcessError) as e:
        print("make_seeds.py: no ELF seeds: %s" % e, file=sys.stderr)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    perfmap_seeds_only = len(sys.argv) < 2  # the corpora kept in git: tests/fuzz/corpus/
    if not perfmap_seeds_only:
        OUT = sys.argv[1]
    perfmap_seeds()
    jitdump_seeds()
    if not perfmap_seeds_only:
        kallsyms_seeds()
        procfs_seeds()
        diagipc_seeds()
        spantable_seeds()
        otelctx_seeds()
        r2rcomposite_seeds()
        elfsym_seeds()
