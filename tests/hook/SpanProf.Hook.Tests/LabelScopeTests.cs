// LabelScopeTests.cs: SpanProf.Label's scoping rules, read from this thread's slot as the sampler reads
// it (the hook runs in the test process: started once, never disabled here).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using SpanProfHook;
using Xunit;

namespace SpanProfHookTests
{
    public class LabelScopeTests
    {
        private readonly Table _t = Util.StartedHook();

        /// <summary>This thread's labels by name, and its span id ("" for no span).</summary>
        private (Dictionary<string, string> Labels, string Span) Now()
        {
            Rec? r = Util.MySlot(_t);
            if (r == null)
                return (new Dictionary<string, string>(), "");
            return (r.Labels(_t.KeyNames()), r.NoSpan ? "" : r.SpanHex);
        }

        private Dictionary<string, string> Labels() => Now().Labels;

        private static Dictionary<string, string> D(params (string k, string v)[] kv) => kv.ToDictionary(x => x.k, x => x.v);

        [Fact]
        public void ALabelHoldsOnlyInsideItsScope() => Util.OnThread(() =>
        {
            using (new SpanProf.Label("tenant", "acme"))
                Assert.Equal(D(("tenant", "acme")), Labels());
            Assert.Empty(Labels());
        });

        [Fact]
        public void ScopesNestAndAnInnerValueOfTheSameKeyWins() => Util.OnThread(() =>
        {
            using (new SpanProf.Label("tenant", "acme"))
            {
                using (new SpanProf.Label("region", "eu"))
                {
                    Assert.Equal(D(("tenant", "acme"), ("region", "eu")), Labels());
                    using (new SpanProf.Label("tenant", "inner"))
                        Assert.Equal(D(("tenant", "inner"), ("region", "eu")), Labels());
                    Assert.Equal(D(("tenant", "acme"), ("region", "eu")), Labels());
                }
                Assert.Equal(D(("tenant", "acme")), Labels());
            }
            Assert.Empty(Labels());
        });

        [Fact]
        public void LabelsWithoutASpanHaveZeroIds() => Util.OnThread(() =>
        {
            using (new SpanProf.Label("job", "batch"))
            {
                Rec r = Util.MySlot(_t)!;
                Assert.True(r.NoSpan);
                Assert.Null(r.Get(Table.KeyLocalRootSpanId));
            }
        });

        [Fact]
        public void ASpanStartedInsideCarriesTheLabelsAndItsStopKeepsThem() => Util.OnThread(() =>
        {
            using (new SpanProf.Label("tenant", "acme"))
            {
                Activity a = new Activity("work").Start();
                var (labels, span) = Now();
                Assert.Equal(a.SpanId.ToHexString(), span);
                Assert.Equal(D(("tenant", "acme")), labels);
                a.Stop();
                (labels, span) = Now();
                Assert.Equal("", span);
                Assert.Equal(D(("tenant", "acme")), labels);
            }
            Assert.Equal((0, ""), (Labels().Count, Now().Span));
        });

        [Fact]
        public void ALabelInsideASpanEndsBeforeTheSpan() => Util.OnThread(() =>
        {
            Activity a = new Activity("outer").Start();
            using (new SpanProf.Label("step", "parse"))
            {
                Assert.Equal(D(("step", "parse")), Labels());
                Assert.Equal(a.SpanId.ToHexString(), Now().Span);
            }
            Assert.Equal((0, a.SpanId.ToHexString()), (Labels().Count, Now().Span));
            a.Stop();
            Assert.Equal("", Now().Span);
        });

        [Fact]
        public void EndingAScopeKeepsASpanStartedInItThatStillRuns() => Util.OnThread(() =>
        {
            Activity a;
            var scope = new SpanProf.Label("tenant", "acme");
            a = new Activity("long").Start();
            scope.Dispose();
            var (labels, span) = Now();
            Assert.Empty(labels);                   // the labels of before the scope
            Assert.Equal(a.SpanId.ToHexString(), span); // the span stays current
            a.Stop();
            Assert.Equal("", Now().Span);
        });

        [Fact]
        public void LabelsFlowIntoTaskRunAndAcrossAwaits() => Util.OnThread(() =>
        {
            using (new SpanProf.Label("tenant", "flow"))
            {
                var onPool = Task.Run(() => (Labels(), Environment.CurrentManagedThreadId)).GetAwaiter().GetResult();
                Assert.Equal(D(("tenant", "flow")), onPool.Item1);
                var afterAwait = Hop().GetAwaiter().GetResult();
                Assert.Equal(D(("tenant", "flow")), afterAwait);
            }
            Assert.Empty(Labels());
        });

        private async Task<Dictionary<string, string>> Hop()
        {
            await Task.Yield(); // continues on a pool thread: its slot must have the flowed label
            await Task.Delay(1);
            return Labels();
        }

        [Fact]
        public void DefaultAndRepeatedDisposeDoNothing() => Util.OnThread(() =>
        {
            default(SpanProf.Label).Dispose();
            Assert.Empty(Labels());
            using (new SpanProf.Label("a", "1"))
            {
                var inner = new SpanProf.Label("b", "2");
                inner.Dispose();
                inner.Dispose(); // back to the labels before inner, not further
                Assert.Equal(D(("a", "1")), Labels());
            }
        });

        [Fact]
        public void NullKeyAddsNothingAndNullValueIsEmpty() => Util.OnThread(() =>
        {
            using (new SpanProf.Label(null!, "x"))
                Assert.Empty(Labels());
            using (new SpanProf.Label("", "x"))
                Assert.Empty(Labels());
            using (new SpanProf.Label("nullvalue", null!))
                Assert.Equal(D(("nullvalue", "")), Labels());
        });

        [Fact]
        public void ValuesAreCutTo255Bytes() => Util.OnThread(() =>
        {
            using (new SpanProf.Label("long", new string('v', 1000)))
                Assert.Equal(new string('v', 255), Labels()["long"]);
        });

        [Fact]
        public void AnotherThreadDoesNotSeeMyLabels()
        {
            using var inScope = new ManualResetEventSlim();
            using var checkedIt = new ManualResetEventSlim();
            var t = new Thread(() =>
            {
                using (new SpanProf.Label("mine", "1"))
                {
                    inScope.Set();
                    checkedIt.Wait();
                }
            });
            using (ExecutionContext.SuppressFlow())
                t.Start();
            inScope.Wait();
            Util.OnThread(() => Assert.False(Labels().ContainsKey("mine")));
            checkedIt.Set();
            t.Join();
        }
    }
}
