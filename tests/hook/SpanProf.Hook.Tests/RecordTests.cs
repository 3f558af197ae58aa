// RecordTests.cs: the pre-encoded record against the OTEP 4947 layout: trace_id[16] span_id[8] valid
// u8, trace flags u8, attrs_data_size u16 LE, then attributes {key u8, len u8, value} (decoded here
// by Rec.Decode, written independently of RecordEncoder).
using System;
using System.Diagnostics;
using System.Linq;
using System.Text;
using SpanProfHook;
using Xunit;

namespace SpanProfHookTests
{
    public class RecordTests
    {
        private static Activity W3C(string name, Activity? parent = null)
        {
            var a = new Activity(name);
            a.SetIdFormat(ActivityIdFormat.W3C);
            if (parent != null)
                a.SetParentId(parent.TraceId, parent.SpanId, ActivityTraceFlags.Recorded);
            return a;
        }

        private static LabelSet L(params (byte k, string v)[] kv)
        {
            LabelSet? s = null;
            foreach (var (k, v) in kv)
                s = LabelSet.With(s, k, Encoding.UTF8.GetBytes(v));
            return s!;
        }

        [Fact]
        public void NoSpanNoLabelsIsTheBareHead()
        {
            byte[] b = RecordEncoder.Encode(null, null, out var root, out var name);
            Assert.Equal(Table.RecordHead, b.Length);
            Assert.All(b, x => Assert.Equal(0, x));
            Assert.Null(root);
            Assert.Null(name);
            Assert.Equal(RecordEncoder.Empty, b);
        }

        [Fact]
        public void SpanIdsFlagsAndLocalRoot()
        {
            Activity a = W3C("GET /x");
            a.ActivityTraceFlags = ActivityTraceFlags.Recorded;
            a.Start();
            try
            {
                byte[] b = RecordEncoder.Encode(a, null, out var root, out var name);
                Rec r = Rec.Decode(b);
                Assert.Equal(a.TraceId.ToHexString(), r.TraceHex);
                Assert.Equal(a.SpanId.ToHexString(), r.SpanHex);
                Assert.Equal(0, r.Valid); // the writer sets valid=1 after the copy
                Assert.Equal((byte)ActivityTraceFlags.Recorded, r.Flags);
                Assert.Equal(b.Length - Table.RecordHead, r.AttrsSize);
                Assert.Equal(new[] { Table.KeyLocalRootSpanId, Table.KeySpanName }, r.Attrs.Select(x => x.Key));
                Assert.Equal(a.SpanId.ToHexString(), r.Get(Table.KeyLocalRootSpanId)); // its own local root
                Assert.Equal("GET /x", r.Get(Table.KeySpanName));
                Assert.Same(a, root);
                Assert.Same(a.DisplayName, name);
            }
            finally
            {
                a.Stop();
            }
        }

        [Fact]
        public void ChildSpanNamesItsLocalRoot()
        {
            Activity root = W3C("root").Start();
            Activity child = W3C("child").Start(); // parent = Activity.Current = root
            try
            {
                Rec r = Rec.Decode(RecordEncoder.Encode(child, null, out var lr, out _));
                Assert.Equal(child.SpanId.ToHexString(), r.SpanHex);
                Assert.Equal(root.TraceId.ToHexString(), r.TraceHex);
                Assert.Equal(root.SpanId.ToHexString(), r.Get(Table.KeyLocalRootSpanId));
                Assert.Equal("root", r.Get(Table.KeySpanName));
                Assert.Same(root, lr);
            }
            finally
            {
                child.Stop();
                root.Stop();
            }
        }

        [Fact]
        public void RemoteParentMakesALocalRoot()
        {
            var remote = new ActivityContext(ActivityTraceId.CreateRandom(), ActivitySpanId.CreateRandom(), ActivityTraceFlags.Recorded, isRemote: true);
            Activity a = W3C("server");
            a.SetParentId(remote.TraceId, remote.SpanId, remote.TraceFlags);
            a.Start();
            try
            {
                Rec r = Rec.Decode(RecordEncoder.Encode(a, null, out _, out _));
                Assert.Equal(remote.TraceId.ToHexString(), r.TraceHex);
                Assert.Equal(a.SpanId.ToHexString(), r.Get(Table.KeyLocalRootSpanId));
            }
            finally
            {
                a.Stop();
            }
        }

        [Fact]
        public void HierarchicalIdsArePublishedAsNoSpan()
        {
            var a = new Activity("legacy");
            a.SetIdFormat(ActivityIdFormat.Hierarchical);
            a.Start();
            try
            {
                Rec r = Rec.Decode(RecordEncoder.Encode(a, null, out _, out _));
                Assert.True(r.NoSpan);
            }
            finally
            {
                a.Stop();
            }
        }

        [Fact]
        public void LabelsFollowTheSpanAttributesInOrderAndALaterValueWins()
        {
            LabelSet s = L((2, "acme"), (3, "eu"));
            s = LabelSet.With(s, 2, Encoding.UTF8.GetBytes("other"));
            Rec r = Rec.Decode(RecordEncoder.Encode(null, s, out _, out _));
            Assert.True(r.NoSpan);
            Assert.Equal(new[] { (2, "other"), (3, "eu") }, r.Attrs.ToArray());
        }

        [Fact]
        public void LongSpanNameCutAt255Bytes()
        {
            Activity a = W3C(new string('é', 200)).Start(); // 400 UTF-8 bytes
            try
            {
                Rec r = Rec.Decode(RecordEncoder.Encode(a, null, out _, out _));
                string n = r.Get(Table.KeySpanName)!;
                Assert.Equal(127, n.Length); // 254 bytes: a 2-byte character is never split
                Assert.True(r.AttrsSize > 255); // attrs_size is a u16: its high byte is used
                Assert.Equal(2 + 16 + 2 + 254, r.AttrsSize);
            }
            finally
            {
                a.Stop();
            }
        }

        [Fact]
        public void ValuesAreCutAtACharacterBoundary()
        {
            Assert.Equal(254, RecordEncoder.Utf8Truncated(new string('é', 200), 255).Length);
            Assert.Equal(255, RecordEncoder.Utf8Truncated(new string('a', 300), 255).Length);
            Assert.Equal("ok"u8.ToArray(), RecordEncoder.Utf8Truncated("ok", 255));
        }

        [Fact]
        public void LabelsPastTheRecordMaximumAreDroppedAndCounted()
        {
            string v = new string('x', 255);
            LabelSet s = L((2, v), (3, v), (4, v), (5, "small"));
            long before = System.Threading.Interlocked.Read(ref RecordEncoder.Dropped);
            byte[] b = RecordEncoder.Encode(null, s, out _, out _);
            Assert.True(b.Length <= Table.RecordMax);
            Rec r = Rec.Decode(b);
            // 28 + 2 * 257 = 542; a third 257-byte label would end at 799: dropped; "small" fits.
            Assert.Equal(new[] { 2, 3, 5 }, r.Attrs.Select(a => a.Key));
            Assert.True(System.Threading.Interlocked.Read(ref RecordEncoder.Dropped) >= before + 1);
        }

        [Fact]
        public void ARenamedLocalRootIsEncodedAgainOnce()
        {
            Activity a = W3C("GET").Start();
            try
            {
                var st = new State(a, null);
                byte[] first = st.Record;
                Assert.Same(first, st.Record); // no change: the same bytes, no allocation
                a.DisplayName = "GET /work/a";
                byte[] renamed = st.Record;
                Assert.NotSame(first, renamed);
                Assert.Equal("GET /work/a", Rec.Decode(renamed).Get(Table.KeySpanName));
                Assert.Same(renamed, st.Record);
            }
            finally
            {
                a.Stop();
            }
        }
    }
}
