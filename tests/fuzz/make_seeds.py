#!/usr/bin/env python3
"""make_seeds.py: write the seed corpora for fuzz_perfmap and fuzz_jitdump (tests/fuzz/corpus/).

Each seed starts with the 3 control bytes the targets read (config, split seed). Names are
shaped like the ones .NET 10.0.12 writes (checked on this machine; see perfmap/README.md).
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
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
    with open(os.path.join(HERE, "corpus", kind, name), "wb") as f:
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


if __name__ == "__main__":
    perfmap_seeds()
    jitdump_seeds()
