// Record.cs: immutable per-context state and its pre-encoded OTEP 4947 record bytes.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Unicode;
using System.Threading;

namespace SpanProfHook
{
    /// <summary>User labels of a context: key index -&gt; UTF-8 value (at most 255 bytes). Immutable.</summary>
    internal sealed class LabelSet
    {
        public readonly byte[] Keys;
        public readonly byte[][] Values;

        private LabelSet(byte[] keys, byte[][] values)
        {
            Keys = keys;
            Values = values;
        }

        /// <summary>A copy of s (may be null) with key set to value; a later value of a key wins.</summary>
        public static LabelSet With(LabelSet? s, byte key, byte[] value)
        {
            int n = s?.Keys.Length ?? 0;
            for (int i = 0; i < n; i++)
            {
                if (s!.Keys[i] == key)
                {
                    var vals = (byte[][])s.Values.Clone();
                    vals[i] = value;
                    return new LabelSet(s.Keys, vals);
                }
            }
            var k = new byte[n + 1];
            var v = new byte[n + 1][];
            if (s != null)
            {
                Array.Copy(s.Keys, k, n);
                Array.Copy(s.Values, v, n);
            }
            k[n] = key;
            v[n] = value;
            return new LabelSet(k, v);
        }
    }

    /// <summary>What one ExecutionContext says the thread is doing: span + labels + record bytes.</summary>
    internal sealed class State
    {
        public readonly Activity? Activity;
        public readonly LabelSet? Labels;

        /// <summary>
        /// The state current when this span started, when this span is its child with the same
        /// labels: a span stop goes back to it without encoding again. The chain follows
        /// Activity.Parent, which the activities hold anyway, so it retains nothing new.
        /// </summary>
        public readonly State? Outer;

        private readonly Activity? _root;
        private Encoded _enc;

        /// <summary>Record bytes (valid byte 0) and the root name string they were made from.</summary>
        private sealed class Encoded
        {
            public readonly byte[] Bytes;
            public readonly string? RootName;

            public Encoded(byte[] bytes, string? rootName)
            {
                Bytes = bytes;
                RootName = rootName;
            }
        }

        public State(Activity? activity, LabelSet? labels, State? outer = null)
        {
            Activity = activity;
            Labels = labels;
            Outer = outer;
            byte[] b = RecordEncoder.Encode(activity, labels, out _root, out string? name);
            _enc = new Encoded(b, name);
        }

        /// <summary>
        /// The record to publish. A local root renamed after this state was encoded (ASP.NET Core
        /// names the request span only after routing) is noticed here, by string identity, and the
        /// record is encoded again: the only allocation on the switch path, once per rename.
        /// </summary>
        public byte[] Record
        {
            get
            {
                Encoded e = Volatile.Read(ref _enc);
                Activity? root = _root;
                if (root != null && !ReferenceEquals(root.DisplayName, e.RootName))
                {
                    byte[] b = RecordEncoder.Encode(Activity, Labels, out _, out string? name);
                    e = new Encoded(b, name);
                    Volatile.Write(ref _enc, e); // racing threads write equal records
                }
                return e.Bytes;
            }
        }
    }

    internal static class RecordEncoder
    {
        // OTEP 4947 record offsets (SP_CTX_OFF_*); the attributes start at Table.RecordHead.
        public const int OffTraceId = 0, OffSpanId = 16, OffValid = 24, OffFlags = 25, OffAttrsSize = 26;

        /// <summary>Labels that did not fit in the record or the key table.</summary>
        public static long Dropped;

        /// <summary>"No span, no labels": zero ids, no attributes.</summary>
        public static readonly byte[] Empty = new byte[Table.RecordHead];

        /// <summary>UTF-8 of s cut to at most max bytes at a character boundary.</summary>
        public static byte[] Utf8Truncated(string s, int max)
        {
            Span<byte> tmp = stackalloc byte[max];
            Utf8.FromUtf16(s, tmp, out _, out int written, replaceInvalidSequences: true, isFinalBlock: true);
            return tmp.Slice(0, written).ToArray();
        }

        [SkipLocalsInit] // every byte that leaves buf is written first
        public static byte[] Encode(Activity? a, LabelSet? labels, out Activity? localRoot, out string? rootName)
        {
            localRoot = null;
            rootName = null;
            Span<byte> buf = stackalloc byte[Table.RecordMax];
            buf.Slice(0, Table.RecordHead).Clear();
            int n = Table.RecordHead;
            if (a != null)
            {
                // The ids are stored as hex strings in the Activity (ToHexString does not allocate):
                // decode them here, faster than ActivityTraceId.CopyTo on .NET 10.
                if (!HexToBytes(a.TraceId.ToHexString(), buf.Slice(OffTraceId, 16)) ||
                    !HexToBytes(a.SpanId.ToHexString(), buf.Slice(OffSpanId, 8)))
                    buf.Slice(0, OffValid).Clear(); // not W3C ids: publish as "no span"
                buf[OffFlags] = (byte)a.ActivityTraceFlags;

                // Local root: the top of the in-process parent chain (a remote parent is not an
                // Activity.Parent, so a span with a remote or no parent is its own local root).
                Activity root = a;
                while (root.Parent != null)
                    root = root.Parent;
                string rootId = root.SpanId.ToHexString();
                buf[n++] = Table.KeyLocalRootSpanId;
                buf[n++] = 16;
                for (int i = 0; i < 16; i++)
                    buf[n + i] = (byte)(i < rootId.Length ? rootId[i] | 0x20 : '0'); // lowercase
                n += 16;
                rootName = root.DisplayName; // compared by identity in State.Record
                localRoot = root;
                Utf8.FromUtf16(rootName ?? "", buf.Slice(n + 2, 255), out _, out int w, replaceInvalidSequences: true, isFinalBlock: true);
                buf[n] = Table.KeySpanName;
                buf[n + 1] = (byte)w;
                n += 2 + w;
            }
            if (labels != null)
            {
                for (int i = 0; i < labels.Keys.Length; i++)
                {
                    byte[] v = labels.Values[i];
                    if (n + 2 + v.Length > Table.RecordMax)
                    {
                        Interlocked.Increment(ref Dropped);
                        continue;
                    }
                    buf[n++] = labels.Keys[i];
                    buf[n++] = (byte)v.Length;
                    v.CopyTo(buf.Slice(n));
                    n += v.Length;
                }
            }
            int attrs = n - Table.RecordHead;
            buf[OffAttrsSize] = (byte)attrs;
            buf[OffAttrsSize + 1] = (byte)(attrs >> 8);
            return buf.Slice(0, n).ToArray();
        }

        private static bool HexToBytes(string hex, Span<byte> dst)
        {
            if (hex.Length != dst.Length * 2)
                return false;
            for (int i = 0; i < dst.Length; i++)
            {
                int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
                if ((hi | lo) < 0)
                    return false;
                dst[i] = (byte)(hi << 4 | lo);
            }
            return true;
        }

        private static int HexValue(char c) =>
            c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    }
}
