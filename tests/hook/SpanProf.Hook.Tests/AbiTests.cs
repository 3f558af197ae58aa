// AbiTests.cs: every constant and offset of the hook ABI that C# mirrors by hand (Table.cs, Record.cs)
// against bpf/profiler.h, compiled: abi_probe.c prints the C values, the test compares. A changed
// constant on either side fails here (the last test shows it on a changed copy of the header).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Text.RegularExpressions;
using SpanProfHook;
using Xunit;

namespace SpanProfHookTests
{
    public unsafe class AbiTests
    {
        /// <summary>C name -> the C# value that must equal it.</summary>
        internal static readonly (string C, object CSharp)[] Mirrors =
        {
            ("SP_CTX_ABI", Table.Abi),
            ("SP_CTX_MAGIC", Table.Magic),
            ("SP_CTX_MEMFD_NAME", Table.MemfdName),
            ("SP_PRCTL_ANNOUNCE", Table.PrctlAnnounce),
            ("SP_CTX_MAX", Table.RecordMax),
            ("SP_CTX_HEAD", Table.RecordHead),
            ("SP_CTX_OFF_TRACE_ID", RecordEncoder.OffTraceId),
            ("SP_CTX_OFF_SPAN_ID", RecordEncoder.OffSpanId),
            ("SP_CTX_OFF_VALID", RecordEncoder.OffValid),
            ("SP_CTX_OFF_FLAGS", RecordEncoder.OffFlags),
            ("SP_CTX_OFF_ATTRS_LEN", RecordEncoder.OffAttrsSize),
            ("SP_CTX_PROBES", Table.Probes),
            ("SP_USER_HZ", Table.UserHz),
            ("SP_CTX_MAX_SLOTS", Table.MaxSlots),
            ("SP_CTX_MAX_KEYS", Table.MaxKeys),
            ("SP_SLOT_HEAD", Table.SlotHead),
            ("SP_SLOT_HASH(1)", Table.SlotHash),
            ("SP_KEY_LOCAL_ROOT_SPAN_ID", Table.KeyLocalRootSpanId),
            ("SP_KEY_SPAN_NAME", Table.KeySpanName),
            ("SP_KEY_USER", Table.KeyUser),
            ("SPANCTX_F_DISABLED", Table.FlagDisabled),
            ("sizeof(sp_ctx_header)", Table.HeaderSize),
            ("offsetof(sp_ctx_header.magic)", Table.OffMagic),
            ("offsetof(sp_ctx_header.abi_version)", Table.OffAbi),
            ("offsetof(sp_ctx_header.header_size)", Table.OffHeaderSize),
            ("offsetof(sp_ctx_header.slot_count)", Table.OffSlotCount),
            ("offsetof(sp_ctx_header.slot_size)", Table.OffSlotSize),
            ("offsetof(sp_ctx_header.slots_offset)", Table.OffSlotsOffset),
            ("offsetof(sp_ctx_header.keys_offset)", Table.OffKeysOffset),
            ("offsetof(sp_ctx_header.keys_size)", Table.OffKeysSize),
            ("offsetof(sp_ctx_header.keys_count)", Table.OffKeysCount),
            ("offsetof(sp_ctx_header.pid)", Table.OffPid),
            ("offsetof(sp_ctx_header.flags)", Table.OffFlags),
            ("offsetof(sp_ctx_header.published_at_ns)", Table.OffPublishedAt),
            ("offsetof(sp_ctx_header.slots_full)", Table.OffSlotsFull),
            ("offsetof(sp_ctx_header.reserved)", Table.OffReserved),
            ("sizeof(sp_slot_head)", Table.SlotHead),
            ("offsetof(sp_slot_head.tid)", Table.OffSlotTid),
            ("offsetof(sp_slot_head.reserved)", Table.OffSlotReserved),
            ("offsetof(sp_slot_head.start_ticks)", Table.OffSlotStartTicks),
        };

        /// <summary>Compiles abi_probe.c against ROOT/bpf/profiler.h and ROOT/user/process/spanctx.h; its values.</summary>
        internal static Dictionary<string, string> Probe(string root)
        {
            string dir = Path.Combine(Path.GetTempPath(), "spanprof-abi-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(dir);
            try
            {
                string exe = Path.Combine(dir, "abi_probe");
                string src = Path.Combine(AppContext.BaseDirectory, "abi_probe.c");
                string cc = Environment.GetEnvironmentVariable("CC") is { Length: > 0 } c ? c : "cc";
                Run(cc, $"-std=gnu11 -Wall -Werror -I{Path.Combine(root, "bpf")} -I{Path.Combine(root, "user", "process")} {src} -o {exe}");
                return Run(exe, "").Split('\n', StringSplitOptions.RemoveEmptyEntries)
                    .Select(l => l.Split(' ', 2)).ToDictionary(f => f[0], f => f[1]);
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }

        private static string Run(string file, string args)
        {
            var psi = new ProcessStartInfo(file, args) { RedirectStandardOutput = true, RedirectStandardError = true };
            using Process p = Process.Start(psi)!;
            string output = p.StandardOutput.ReadToEnd();
            string err = p.StandardError.ReadToEnd();
            p.WaitForExit();
            if (p.ExitCode != 0)
                throw new Exception($"{file} {args}: exit {p.ExitCode}: {err}");
            return output;
        }

        /// <summary>Every mirror that differs from the header, as "NAME: C x, C# y".</summary>
        internal static List<string> Mismatches(Dictionary<string, string> c)
        {
            var bad = new List<string>();
            foreach (var (name, cs) in Mirrors)
            {
                string want = Convert.ToString(cs, System.Globalization.CultureInfo.InvariantCulture)!;
                if (!c.TryGetValue(name, out string? got))
                    bad.Add($"{name}: not printed by abi_probe.c");
                else if (got != want)
                    bad.Add($"{name}: C {got}, C# {want}");
            }
            return bad;
        }

        [Fact]
        public void CSharpMirrorsEqualProfilerH()
        {
            var bad = Mismatches(Probe(Util.RepoRoot));
            Assert.True(bad.Count == 0, "hook ABI drift between bpf/profiler.h and hook/src:\n" + string.Join("\n", bad));
        }

        [Fact]
        public void EveryHeaderOffsetOfTableCsIsChecked()
        {
            // A new Off* constant in Table.cs or Record.cs must get its line in Mirrors.
            var fields = typeof(Table).GetFields(System.Reflection.BindingFlags.Static | System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.NonPublic)
                .Concat(typeof(RecordEncoder).GetFields(System.Reflection.BindingFlags.Static | System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.NonPublic))
                .Where(f => f.IsLiteral && f.Name.StartsWith("Off", StringComparison.Ordinal)).ToList();
            Assert.NotEmpty(fields);
            foreach (var f in fields)
                Assert.True(MirrorNames.ContainsKey(f.DeclaringType!.Name + "." + f.Name), $"{f.DeclaringType!.Name}.{f.Name} is not compared with profiler.h");
        }

        // The C# constant behind each Mirrors line, for the completeness check above.
        private static readonly Dictionary<string, string> MirrorNames = new()
        {
            ["RecordEncoder.OffTraceId"] = "SP_CTX_OFF_TRACE_ID",
            ["RecordEncoder.OffSpanId"] = "SP_CTX_OFF_SPAN_ID",
            ["RecordEncoder.OffValid"] = "SP_CTX_OFF_VALID",
            ["RecordEncoder.OffFlags"] = "SP_CTX_OFF_FLAGS",
            ["RecordEncoder.OffAttrsSize"] = "SP_CTX_OFF_ATTRS_LEN",
            ["Table.OffMagic"] = "offsetof(sp_ctx_header.magic)",
            ["Table.OffAbi"] = "offsetof(sp_ctx_header.abi_version)",
            ["Table.OffHeaderSize"] = "offsetof(sp_ctx_header.header_size)",
            ["Table.OffSlotCount"] = "offsetof(sp_ctx_header.slot_count)",
            ["Table.OffSlotSize"] = "offsetof(sp_ctx_header.slot_size)",
            ["Table.OffSlotsOffset"] = "offsetof(sp_ctx_header.slots_offset)",
            ["Table.OffKeysOffset"] = "offsetof(sp_ctx_header.keys_offset)",
            ["Table.OffKeysSize"] = "offsetof(sp_ctx_header.keys_size)",
            ["Table.OffKeysCount"] = "offsetof(sp_ctx_header.keys_count)",
            ["Table.OffPid"] = "offsetof(sp_ctx_header.pid)",
            ["Table.OffFlags"] = "offsetof(sp_ctx_header.flags)",
            ["Table.OffPublishedAt"] = "offsetof(sp_ctx_header.published_at_ns)",
            ["Table.OffSlotsFull"] = "offsetof(sp_ctx_header.slots_full)",
            ["Table.OffReserved"] = "offsetof(sp_ctx_header.reserved)",
            ["Table.OffSlotTid"] = "offsetof(sp_slot_head.tid)",
            ["Table.OffSlotReserved"] = "offsetof(sp_slot_head.reserved)",
            ["Table.OffSlotStartTicks"] = "offsetof(sp_slot_head.start_ticks)",
        };

        [Fact]
        public void MirrorNamesAreInMirrors()
        {
            var names = Mirrors.Select(m => m.C).ToHashSet();
            foreach (var c in MirrorNames.Values)
                Assert.Contains(c, names);
        }

        [Fact]
        public void TheHeaderTheHookWritesReadsBackAtTheCOffsets()
        {
            var c = Probe(Util.RepoRoot);
            int Off(string f) => int.Parse(c[$"offsetof(sp_ctx_header.{f})"]);
            Table t = Table.Create(16, null, out string? err) ?? throw new Exception(err);
            byte* h = t.Base;
            Assert.Equal(c["SP_CTX_MAGIC"], new string((sbyte*)h, Off("magic"), 8));
            Assert.Equal(uint.Parse(c["SP_CTX_ABI"]), *(uint*)(h + Off("abi_version")));
            Assert.Equal(uint.Parse(c["sizeof(sp_ctx_header)"]), *(uint*)(h + Off("header_size")));
            Assert.Equal(16u, *(uint*)(h + Off("slot_count")));
            Assert.Equal(656u, *(uint*)(h + Off("slot_size")));
            Assert.Equal((uint)Environment.ProcessId, *(uint*)(h + Off("pid")));
            Assert.Equal(2u, *(uint*)(h + Off("keys_count")));
            Assert.Equal(0u, *(uint*)(h + Off("flags")));
            ulong slotsOffset = *(uint*)(h + Off("slots_offset"));
            Assert.Equal(0UL, slotsOffset % (ulong)Environment.SystemPageSize);
            Assert.True(slotsOffset >= *(uint*)(h + Off("keys_offset")) + *(uint*)(h + Off("keys_size")));
            // A claimed slot: tid at the C offset of sp_slot_head.tid, the record after SP_SLOT_HEAD.
            byte* s = t.ClaimSlot(0x7fff0001, 42);
            Assert.True(s != null);
            Assert.Equal(0x7fff0001u, *(uint*)(s + int.Parse(c["offsetof(sp_slot_head.tid)"])));
            Assert.Equal(42UL, *(ulong*)(s + int.Parse(c["offsetof(sp_slot_head.start_ticks)"])));
            ulong idx = (0x7fff0001u * uint.Parse(c["SP_SLOT_HASH(1)"])) & 15;
            Assert.True(s == h + slotsOffset + idx * 656, "slot of the tid not at SP_SLOT_HASH(tid) & (slot_count - 1)");
        }

        [Fact]
        public void AChangedConstantInTheHeaderFailsTheCheck()
        {
            // A copy of the two headers with one #define and one struct field changed, as an ABI
            // change on the C side alone would do: the check must name both.
            string root = Path.Combine(Path.GetTempPath(), "spanprof-abi-changed-" + Guid.NewGuid().ToString("N"));
            try
            {
                Directory.CreateDirectory(Path.Combine(root, "bpf"));
                Directory.CreateDirectory(Path.Combine(root, "user", "process"));
                string h = File.ReadAllText(Path.Combine(Util.RepoRoot, "bpf", "profiler.h"));
                string changed = Regex.Replace(h, @"(#define SP_CTX_OFF_VALID\s+)24", "${1}23");
                changed = changed.Replace("\t__u32 pid;\t\t/* getpid()", "\t__u32 pid_ns;\n\t__u32 pid;\t\t/* getpid()");
                changed = changed.Replace("sizeof(struct sp_ctx_header) == 80", "sizeof(struct sp_ctx_header) == 88");
                changed = changed.Replace("__u64 reserved[2];", "__u64 reserved[1];\n\t__u32 pad;");
                Assert.NotEqual(h, changed);
                File.WriteAllText(Path.Combine(root, "bpf", "profiler.h"), changed);
                File.Copy(Path.Combine(Util.RepoRoot, "user", "process", "spanctx.h"), Path.Combine(root, "user", "process", "spanctx.h"));
                var bad = Mismatches(Probe(root));
                Assert.Contains(bad, b => b.StartsWith("SP_CTX_OFF_VALID: C 23, C# 24", StringComparison.Ordinal));
                Assert.Contains(bad, b => b.StartsWith("offsetof(sp_ctx_header.pid): C 44, C# 40", StringComparison.Ordinal));
                Assert.Contains(bad, b => b.StartsWith("offsetof(sp_ctx_header.flags):", StringComparison.Ordinal));
            }
            finally
            {
                Directory.Delete(root, true);
            }
        }
    }
}
