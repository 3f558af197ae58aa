// DisableTests.cs: every way the hook fails disables it for the process with exactly one stderr line,
// frees every slot it claimed and marks the table disabled, while the app runs on with labels and
// spans as no-ops. Each case is a fresh process (Program.cs), since disabling is for good.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using Xunit;

namespace SpanProfHookTests
{
    public class DisableTests
    {
        internal sealed record Child(int Exit, string Stdout, string[] StderrLines, Dictionary<string, string> Facts);

        internal static Child Run(Dictionary<string, string> env, params string[] args)
        {
            string dll = typeof(DisableTests).Assembly.Location;
            string host = Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") is { Length: > 0 } h ? h : "dotnet";
            var psi = new ProcessStartInfo(host) { RedirectStandardOutput = true, RedirectStandardError = true };
            psi.ArgumentList.Add(dll);
            psi.ArgumentList.Add("child");
            foreach (string a in args)
                psi.ArgumentList.Add(a);
            foreach (string k in psi.Environment.Keys.Where(k => k.StartsWith("SPANPROF_", StringComparison.Ordinal)).ToList())
                psi.Environment.Remove(k);
            psi.Environment.Remove("DOTNET_STARTUP_HOOKS");
            foreach (var (k, v) in env)
                psi.Environment[k] = v;
            using Process p = Process.Start(psi)!;
            var errTask = p.StandardError.ReadToEndAsync();
            string stdout = p.StandardOutput.ReadToEnd();
            if (!p.WaitForExit(60_000))
            {
                p.Kill();
                throw new TimeoutException("child did not exit");
            }
            string stderr = errTask.Result;
            var facts = stdout.Split('\n').FirstOrDefault(l => l.StartsWith("facts ", StringComparison.Ordinal))?
                .Substring(6).Split(' ').Select(f => f.Split('=', 2)).ToDictionary(f => f[0], f => f[1])
                ?? new Dictionary<string, string>();
            return new Child(p.ExitCode, stdout, stderr.Split('\n', StringSplitOptions.RemoveEmptyEntries), facts);
        }

        private static void AssertRanOn(Child c)
        {
            Assert.True(c.Exit == 0, $"child exit {c.Exit}: {c.Stdout} {string.Join("\n", c.StderrLines)}");
            Assert.Contains("done", c.Stdout);
            Assert.Equal("False", c.Facts["threw"]); // labels and spans never throw into the app
        }

        [Fact]
        public void WithoutAFaultTheHookRuns()
        {
            Child c = Run(new());
            AssertRanOn(c);
            Assert.Empty(c.StderrLines);
            Assert.Equal("True", c.Facts["active"]);
            Assert.Equal("1", c.Facts["tables"]);
            Assert.Equal("0", c.Facts["flags"]);
            Assert.True(int.Parse(c.Facts["ever_claimed"]) >= 2, "main and pool threads claimed slots");
        }

        // Table creation fails: no table at all.
        [Theory]
        [InlineData("memfd", "spanprof-hook: disabled: memfd_create failed (errno 1)")]
        [InlineData("ftruncate", "spanprof-hook: disabled: ftruncate(")]
        [InlineData("mmap", "spanprof-hook: disabled: mmap(")]
        [InlineData("runtime", "spanprof-hook: disabled: .NET 7.0.20 is not supported (the hook needs .NET 8 or later); the app runs without span labels")]
        public void NoTable(string fault, string line)
        {
            Child c = Run(new() { ["SPANPROF_HOOK_FAULT"] = fault });
            AssertRanOn(c);
            Assert.Single(c.StderrLines);
            Assert.StartsWith(line, c.StderrLines[0]);
            Assert.Equal("False", c.Facts["started"]);
            Assert.Equal("False", c.Facts["active"]);
            Assert.Equal("0", c.Facts["tables"]);
        }

        // A failure once the table exists: slots freed, header marked, the mapping stays (readers
        // see SPANCTX_F_DISABLED and no slot).
        [Theory]
        [InlineData("startup", "spanprof-hook: disabled: start-up failed: InvalidOperationException: fault injected at startup", false)]
        [InlineData("span-change", "spanprof-hook: disabled: span change: fault injected at span-change", true)]
        [InlineData("switch", "spanprof-hook: disabled: context switch: fault injected at switch", true)]
        [InlineData("label", "spanprof-hook: disabled: label: fault injected at label", true)]
        [InlineData("label-end", "spanprof-hook: disabled: label scope end: fault injected at label-end", true)]
        public void AfterTheTableExists(string fault, string line, bool startedFirst)
        {
            Child c = Run(new() { ["SPANPROF_HOOK_FAULT"] = fault });
            AssertRanOn(c);
            Assert.Equal(new[] { line }, c.StderrLines);
            Assert.Equal(startedFirst.ToString(), c.Facts["started"]);
            Assert.Equal("False", c.Facts["active"]);
            Assert.Equal("1", c.Facts["tables"]);
            Assert.Equal("1", c.Facts["flags"]); // SPANCTX_F_DISABLED
            Assert.Equal("0", c.Facts["claimed"]);
        }

        [Fact]
        public void SlotsClaimedBeforeTheFailureAreFreed()
        {
            // label-end fails at the first scope's end: the span and the label claimed the main
            // thread's slot before.
            Child c = Run(new() { ["SPANPROF_HOOK_FAULT"] = "label-end" });
            AssertRanOn(c);
            Assert.True(int.Parse(c.Facts["ever_claimed"]) >= 1);
            Assert.Equal("0", c.Facts["claimed"]);
        }

        [Fact]
        public void AnotherTableInTheProcess()
        {
            Child c = Run(new(), "existing-table");
            AssertRanOn(c);
            Assert.Equal(new[] { "spanprof-hook: disabled: a spanprof-ctx table already exists in this process" }, c.StderrLines);
            Assert.Equal("False", c.Facts["active"]);
            Assert.Equal("1", c.Facts["tables"]); // only the one that was there
            Assert.Equal("-1", c.Facts["flags"]); // the hook made none
        }

        [Fact]
        public void DisabledByTheEnvironmentSilently()
        {
            Child c = Run(new() { ["SPANPROF_HOOK_DISABLE"] = "1" });
            AssertRanOn(c);
            Assert.Empty(c.StderrLines);
            Assert.Equal("False", c.Facts["active"]);
            Assert.Equal("0", c.Facts["tables"]);
        }

        [Fact]
        public void QuietSaysNothing()
        {
            Child c = Run(new() { ["SPANPROF_HOOK_FAULT"] = "label", ["SPANPROF_HOOK_QUIET"] = "1" });
            AssertRanOn(c);
            Assert.Empty(c.StderrLines);
            Assert.Equal("1", c.Facts["flags"]);
        }

        [Fact]
        public void TheRuntimeGate()
        {
            Assert.Null(SpanProfHook.Hook.RuntimeRefusal(new Version(8, 0, 0), null));
            Assert.Null(SpanProfHook.Hook.RuntimeRefusal(new Version(9, 0, 11), null));
            Assert.Null(SpanProfHook.Hook.RuntimeRefusal(new Version(10, 0, 12), null));
            Assert.Null(SpanProfHook.Hook.RuntimeRefusal(new Version(11, 0, 0), null));
            Assert.Equal(".NET 7.0.20 is not supported (the hook needs .NET 8 or later); the app runs without span labels",
                SpanProfHook.Hook.RuntimeRefusal(new Version(7, 0, 20), null));
            Assert.NotNull(SpanProfHook.Hook.RuntimeRefusal(new Version(6, 0, 36), null));
        }
    }
}
