// TestUtil.cs: what the tests share: the repository root, a decoded slot record, running code on a
// thread of its own, and reading a table's slots the way the BPF sampler does.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Reflection;
using System.Text;
using System.Threading;
using SpanProfHook;
using Xunit;

namespace SpanProfHookTests
{
    /// <summary>One OTEP 4947 record, decoded independently of the encoder.</summary>
    internal sealed class Rec
    {
        public byte[] TraceId = new byte[16];
        public byte[] SpanId = new byte[8];
        public byte Valid, Flags;
        public int AttrsSize;
        public readonly List<(int Key, string Value)> Attrs = new();

        public string TraceHex => Convert.ToHexString(TraceId).ToLowerInvariant();
        public string SpanHex => Convert.ToHexString(SpanId).ToLowerInvariant();
        public bool NoSpan => TraceId.All(b => b == 0) && SpanId.All(b => b == 0);

        /// <summary>Decodes bytes laid out as trace_id[16] span_id[8] valid flags attrs_size(u16 LE) attrs.</summary>
        public static Rec Decode(ReadOnlySpan<byte> b)
        {
            var r = new Rec();
            b.Slice(0, 16).CopyTo(r.TraceId);
            b.Slice(16, 8).CopyTo(r.SpanId);
            r.Valid = b[24];
            r.Flags = b[25];
            r.AttrsSize = b[26] | b[27] << 8;
            int p = 28, end = 28 + r.AttrsSize;
            if (end > b.Length)
                throw new FormatException($"attrs_size {r.AttrsSize} past the record ({b.Length} bytes)");
            while (p < end)
            {
                int key = b[p], len = b[p + 1];
                if (p + 2 + len > end)
                    throw new FormatException("attribute past attrs_size");
                r.Attrs.Add((key, Encoding.UTF8.GetString(b.Slice(p + 2, len))));
                p += 2 + len;
            }
            return r;
        }

        /// <summary>User labels by key name (key table of the process's hook).</summary>
        public Dictionary<string, string> Labels(string[] keyNames) =>
            Attrs.Where(a => a.Key >= Table.KeyUser).ToDictionary(a => keyNames[a.Key], a => a.Value);

        public string? Get(int key) => Attrs.Where(a => a.Key == key).Select(a => a.Value).FirstOrDefault();
    }

    internal static unsafe class Util
    {
        public static string RepoRoot { get; } =
            typeof(Util).Assembly.GetCustomAttributes<AssemblyMetadataAttribute>().First(a => a.Key == "RepoRoot").Value!;

        /// <summary>Runs f on a new thread with no flowed context (no span, no labels); rethrows.</summary>
        public static T OnThread<T>(Func<T> f)
        {
            T result = default!;
            Exception? err = null;
            Thread t;
            using (ExecutionContext.SuppressFlow())
            {
                t = new Thread(() =>
                {
                    try { result = f(); }
                    catch (Exception e) { err = e; }
                });
                t.Start();
            }
            t.Join();
            if (err != null)
                throw new Exception("on thread: " + err.Message, err);
            return result;
        }

        public static void OnThread(Action a) => OnThread(() => { a(); return 0; });

        /// <summary>
        /// The calling thread's record as the sampler finds it: probe SP_CTX_PROBES slots from
        /// SP_SLOT_HASH(tid); null when the thread has no slot.
        /// </summary>
        public static Rec? MySlot(Table t)
        {
            uint tid = (uint)Native.GetTid();
            byte* s = FindSlot(t, tid);
            if (s == null)
                return null;
            var r = Rec.Decode(new ReadOnlySpan<byte>(s + Table.SlotHead, Table.RecordMax));
            if (r.Valid != 1)
                throw new InvalidOperationException("slot of a running thread is not valid");
            return r;
        }

        public static byte* FindSlot(Table t, uint tid)
        {
            uint h = tid * Table.SlotHash;
            for (uint k = 0; k < Table.Probes; k++)
            {
                byte* s = t.Slot((h + k) & (t.SlotCount - 1));
                if (*(uint*)s == tid)
                    return s;
            }
            return null;
        }

        private static bool s_startedAtLoad;

        /// <summary>
        /// The test process's own hook starts when the test assembly loads, before any test: the
        /// hook refuses to start in a process that already has a spanprof-ctx mapping, and
        /// TableTests make some. (The child processes of DisableTests start theirs in Main.)
        /// </summary>
        [System.Runtime.CompilerServices.ModuleInitializer]
        internal static void StartHookAtLoad()
        {
            if (Environment.GetCommandLineArgs().Skip(1).FirstOrDefault() != "child")
                s_startedAtLoad = SpanProfHook.Hook.EnsureStarted("tests");
        }

        /// <summary>The process's hook, started once for the in-process tests.</summary>
        public static Table StartedHook()
        {
            Assert.True(s_startedAtLoad && SpanProfHook.Hook.IsActive, "the hook did not start in the test process");
            return SpanProfHook.Hook.CurrentTable!;
        }
    }
}
