// Program.cs: HookCheck, runs known span/label patterns and tells tests/integration/hook-table.sh what
// each thread's slot must hold at each checkpoint (the script checks it from outside with ctxdump).
//
// Protocol on stdout, one line each; after CHECK/HEADER lines the app waits for one line on stdin:
//   CHECK <name> tid=<tid> want=<what ctxdump -t prints after "start_ticks=N ">   (or want=any-nospan)
//   HEADER <name> <field><op><n>      header field check (op is = or >=)
//   PAUSE pid=<pid>                   the script looks at the process, then answers
//   SELF <name> ok|FAIL <detail>     checked inside the app
//   INFO ...                          diagnostics
//   DONE
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Runtime.Loader;
using System.Threading;
using System.Threading.Tasks;

internal static class Program
{
    private static readonly ActivitySource Src = new("HookCheck");
    private static Func<string, string, IDisposable>? s_label;
    private static int s_failures;

    [DllImport("libc")]
    private static extern int gettid();

    private static int Main(string[] args)
    {
        ActivitySource.AddActivityListener(new ActivityListener
        {
            ShouldListenTo = s => s.Name == "HookCheck",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        });
#if SPANPROF_REF
        const string mode = "ref";
        s_label = (k, v) => new SpanProf.Label(k, v);
#else
        const string mode = "plain";
#endif
        var copies = AppDomain.CurrentDomain.GetAssemblies().Where(IsHook)
            .Select(a => $"{AssemblyLoadContext.GetLoadContext(a)?.Name}:{a.Location}").ToList();
        Console.WriteLine($"INFO mode={mode} pid={Environment.ProcessId} hook-assemblies-at-start=[{string.Join(",", copies)}]");

        var scenarios = args.Length > 0 ? args.ToList() : new List<string>
        {
            "callbacks", "nested", "async", "rename", "labels-nospan", "nested-labels", "pool-flow", "suppress-flow", "pyroscope", "churn",
        };
        for (int i = 0; i < scenarios.Count; i++)
        {
            string s = scenarios[i];
            Console.WriteLine($"INFO scenario {s}");
            switch (s)
            {
                case "nested": OnThread(Nested); break;
                case "async": AsyncScenario().GetAwaiter().GetResult(); break;
                case "rename": Rename().GetAwaiter().GetResult(); break;
                case "callbacks": Callbacks(); break;
                case "labels-nospan": OnThread(LabelsNoSpan); break;
                case "nested-labels": OnThread(NestedLabels); break;
                case "pool-flow": PoolFlow(); break;
                case "suppress-flow": SuppressFlow(); break;
                case "pyroscope": Pyroscope(); break;
                case "churn": ChurnScenario(300, 10); break;
                case "overflow": Overflow(40); break;
                case "twocopies": TwoCopies(scenarios[++i]); break;
                case "pause": Console.WriteLine($"PAUSE pid={Environment.ProcessId}"); Wait(); break;
                case "label-noop": LabelNoop(); break;
                case "keys": Keys(int.Parse(scenarios[++i]), int.Parse(scenarios[++i])); break;
                case "sleep": Thread.Sleep(int.Parse(scenarios[++i]) * 1000); break;
                default:
                    Console.WriteLine($"SELF args FAIL unknown scenario {s}");
                    s_failures++;
                    break;
            }
        }
        Console.WriteLine("DONE");
        return s_failures == 0 ? 0 : 1;
    }

    // keys N MS: N new label keys, one every MS ms (tests/integration/otelctx.sh: each one republishes
    // the process context's key map while a reader reads it).
    private static void Keys(int n, int ms)
    {
        for (int k = 0; k < n; k++)
        {
            using (Label($"key.{k:D3}", "v"))
            {
            }
            if (ms > 0)
                Thread.Sleep(ms);
        }
        Console.WriteLine($"INFO keys added={n}");
    }

    // ---- helpers ---------------------------------------------------------------------------

    // SpanProf.Hook (package / startup hook) or SpanProf.Hook.Startup (startup-hook-only build).
    private static bool IsHook(Assembly a) => a.GetName().Name is "SpanProf.Hook" or "SpanProf.Hook.Startup";

    private static IDisposable Label(string k, string v)
    {
        if (s_label == null)
        {
            // Startup-hook-only mode: the app has no reference, the hook is loaded: use reflection.
            Assembly? asm = AppDomain.CurrentDomain.GetAssemblies().FirstOrDefault(IsHook);
            if (asm == null)
                throw new InvalidOperationException("SpanProf.Hook is not loaded: run with DOTNET_STARTUP_HOOKS");
            s_label = LabelOf(asm);
        }
        return s_label(k, v);
    }

    // new SpanProf.Label(key, value) of one copy of the hook (boxed: Dispose works on the box).
    private static Func<string, string, IDisposable> LabelOf(Assembly hook)
    {
        Type t = hook.GetType("SpanProf.Label") ?? throw new InvalidOperationException($"no SpanProf.Label in {hook.Location}");
        return (key, val) => (IDisposable)Activator.CreateInstance(t, key, val)!;
    }

    // The hook's internal start (what the first label does): true when span context is published.
    private static bool StartOf(Assembly hook) =>
        (bool)hook.GetType("SpanProfHook.Hook")!.GetMethod("EnsureStarted")!.Invoke(null, new object[] { "HookCheck" })!;

    private static void Wait()
    {
        // The script answers after checking; EOF (run by hand) just goes on.
        Console.In.ReadLine();
    }

    private static void Check(string name, int tid, string want)
    {
        Console.WriteLine($"CHECK {name} tid={tid} want={want}");
        Wait();
    }

    private static void Header(string name, string cond)
    {
        Console.WriteLine($"HEADER {name} {cond}");
        Wait();
    }

    private static void Self(string name, bool ok, string detail = "")
    {
        Console.WriteLine($"SELF {name} {(ok ? "ok" : "FAIL")} {detail}");
        if (!ok)
            s_failures++;
    }

    private static void OnThread(Action a)
    {
        var t = new Thread(() => a());
        t.Start();
        t.Join();
    }

    private static string Want(Activity? a, params (string k, string v)[] labels)
    {
        string s = "thread=live valid=1";
        if (a == null)
        {
            s += " nospan";
        }
        else
        {
            Activity root = a;
            while (root.Parent != null)
                root = root.Parent;
            s += $" trace={a.TraceId.ToHexString()} span={a.SpanId.ToHexString()} flags={(int)a.ActivityTraceFlags:x2}";
            s += $" local_root_span_id={root.SpanId.ToHexString()} span_name=\"{root.DisplayName}\"";
        }
        foreach (var (k, v) in labels)
            s += $" {k}=\"{v}\"";
        return s;
    }

    // ---- scenarios -------------------------------------------------------------------------

    private static void Nested()
    {
        int tid = gettid();
        using (Activity? root = Src.StartActivity("root-A"))
        {
            using (Activity? child = Src.StartActivity("child-B"))
            {
                using (Label("tenant", "acme"))
                    Check("nested-child", tid, Want(child, ("tenant", "acme")));
                Check("nested-child-nolabel", tid, Want(child));
            }
            Check("nested-root", tid, Want(root));
            using (Activity? sibling = Src.StartActivity("child-C"))
            {
                using (Label("tenant", "acme"))
                {
                    // Stopped inside the label scope: the parent becomes current with the label kept.
                    sibling?.Stop();
                    Check("nested-stop-in-label", tid, Want(root, ("tenant", "acme")));
                }
                Check("nested-label-after-stop", tid, Want(root));
            }
            Check("nested-root-again", tid, Want(root));
        }
        Check("nested-after", tid, Want(null));
    }

    private static async Task AsyncScenario()
    {
        int mainTid = gettid();
        int lastTid;
        using (Activity? root = Src.StartActivity("async-root"))
        {
            using (Label("region", "eu"))
            {
                await Task.Yield();
                await Task.Delay(1);
                lastTid = gettid();
                Self("async-hopped", lastTid != mainTid, $"main={mainTid} continuation={lastTid}");
                Check("async-continuation", lastTid, Want(root, ("region", "eu")));
                // The thread that started the method gave its context back when the method yielded.
                Check("async-starter-cleared", mainTid, Want(null));
                await Task.Delay(1);
                using (Activity? child = Src.StartActivity("async-child"))
                {
                    await Task.Yield();
                    lastTid = gettid();
                    Check("async-child", lastTid, Want(child, ("region", "eu")));
                }
            }
        }
        lastTid = gettid();
        await Task.Delay(1);
        int after = gettid();
        // Nothing current any more, on whichever thread the method now runs.
        Check("async-after-span", after, Want(null));
        // Give the pool thread that ran the span time to return to the pool.
        _ = lastTid;
        await Task.Run(() => { });
        Console.WriteLine($"INFO async-pool-thread {lastTid}");
        await RunOnFreshThread(() => Check("async-pool-thread-idle", lastTid, "any-nospan"));
    }

    private static async Task Rename()
    {
        // ASP.NET Core names the request span after routing, long after it became current: the
        // published span_name must follow, on label-scope exit and after an await.
        using Activity? root = Src.StartActivity("Microsoft.AspNetCore.Hosting.HttpRequestIn");
        int tid = gettid();
        Check("rename-before", tid, Want(root));
        using (Label("tenant", "acme"))
        {
            root!.DisplayName = "GET /work/labels";
            Check("rename-in-scope-stale-until-next-write", tid, Want(root, ("tenant", "acme")).Replace(
                "span_name=\"GET /work/labels\"", "span_name=\"Microsoft.AspNetCore.Hosting.HttpRequestIn\""));
        }
        Check("rename-after-scope", tid, Want(root));
        await Task.Yield();
        Check("rename-after-await", gettid(), Want(root));
        using (Activity? child = Src.StartActivity("child"))
            Check("rename-child", gettid(), Want(child));
    }

    // What the runtime tells an AsyncLocal change handler; the hook relies on these (hook/README.md).
    private static void Callbacks()
    {
        var events = new System.Collections.Concurrent.ConcurrentQueue<(int Tid, string? Prev, string? Cur, bool Switch)>();
        var al = new AsyncLocal<string>(a => events.Enqueue((gettid(), a.PreviousValue, a.CurrentValue, a.ThreadContextChanged)));
        bool Saw(int tid, string? prev, string? cur, bool sw) => events.Any(e => e.Tid == tid && e.Prev == prev && e.Cur == cur && e.Switch == sw);

        int poolTid = 0;
        Task.Run(() => { poolTid = gettid(); al.Value = "A"; }).Wait();
        Thread.Sleep(200); // the reset runs after the work item, after Wait() returned
        Self("callback-pool-item-end", Saw(poolTid, "A", null, true), "a pool thread is reset when its work item ends");

        OnThread(() =>
        {
            al.Value = "M";
            int threadTid = 0;
            var t = new Thread(() => threadTid = gettid());
            t.Start();
            t.Join();
            Self("callback-thread-flow", Saw(threadTid, null, "M", true), "a new thread starts in the flowed context");
            Self("callback-thread-exit", Saw(threadTid, "M", null, true), "and leaves it when it exits");
        });
        foreach (var e in events)
            Console.WriteLine($"INFO callback tid={e.Tid} {e.Prev ?? "null"} -> {e.Cur ?? "null"} switch={e.Switch}");
    }

    private static Task RunOnFreshThread(Action a)
    {
        var tcs = new TaskCompletionSource();
        var t = new Thread(() => { a(); tcs.SetResult(); });
        t.Start();
        return tcs.Task;
    }

    private static void LabelsNoSpan()
    {
        int tid = gettid();
        using (Label("job", "batch"))
            Check("labels-nospan", tid, Want(null, ("job", "batch")));
        Check("labels-nospan-after", tid, Want(null));
    }

    private static void NestedLabels()
    {
        int tid = gettid();
        using (Activity? span = Src.StartActivity("labelled"))
        {
            using (Label("a", "1"))
            {
                using (Label("a", "2"))
                {
                    using (Label("b", "3"))
                        Check("labels-inner", tid, Want(span, ("a", "2"), ("b", "3")));
                    Check("labels-middle", tid, Want(span, ("a", "2")));
                }
                Check("labels-outer", tid, Want(span, ("a", "1")));
                string big = new string('x', 300);       // cut to 255 bytes
                using (Label("big", big))
                    Check("labels-truncated", tid, Want(span, ("a", "1"), ("big", new string('x', 255))));
                string euro = new string('€', 100);      // 300 bytes of UTF-8: cut at a char boundary
                using (Label("utf8", euro))
                    Check("labels-utf8-cut", tid, Want(span, ("a", "1"), ("utf8", new string('€', 85))));
            }
            Check("labels-none", tid, Want(span));
        }
    }

    private static void PoolFlow()
    {
        using Activity? span = Src.StartActivity("pool-parent");
        using (Label("flow", "yes"))
        {
            Task.Run(() => Check("pool-flow", gettid(), Want(span, ("flow", "yes")))).Wait();
        }
    }

    private static void SuppressFlow()
    {
        using Activity? span = Src.StartActivity("suppressed");
        var done = new ManualResetEventSlim();
        using (ExecutionContext.SuppressFlow())
        {
            ThreadPool.UnsafeQueueUserWorkItem(_ =>
            {
                Check("suppress-flow", gettid(), "any-nospan");
                done.Set();
            }, null);
        }
        done.Wait();
    }

    private static void Pyroscope()
    {
        bool on = Environment.GetEnvironmentVariable("SPANPROF_PYROSCOPE_PROFILE_ID") == "1";
        using Activity? root = Src.StartActivity("pyro-root");
        using Activity? child = Src.StartActivity("pyro-child");
        object? rt = root?.GetTagItem("pyroscope.profile.id");
        object? ct = child?.GetTagItem("pyroscope.profile.id");
        if (on)
            Self("pyroscope-on", rt as string == root?.SpanId.ToHexString() && ct == null, $"root={rt} child={ct}");
        else
            Self("pyroscope-off", rt == null && ct == null, $"root={rt} child={ct}");
    }

    private static void Churn(int total, int concurrent)
    {
        for (int i = 0; i < total; i += concurrent)
        {
            var ts = Enumerable.Range(0, concurrent).Select(_ => new Thread(() =>
            {
                using Activity? a = Src.StartActivity("churn");
                Thread.SpinWait(100);
            })).ToList();
            ts.ForEach(t => t.Start());
            ts.ForEach(t => t.Join());
        }
    }

    private static void ChurnScenario(int total, int concurrent)
    {
        Churn(total, concurrent);
        Console.WriteLine($"INFO churned {total} threads");
        Header("churn-no-full", "slots_full=0");
        OnThread(() =>
        {
            using Activity? a = Src.StartActivity("after-churn");
            Check("churn-fresh-thread", gettid(), Want(a));
        });
    }

    private static void Overflow(int n)
    {
        using var started = new CountdownEvent(n);
        using var release = new ManualResetEventSlim();
        var ts = Enumerable.Range(0, n).Select(_ => new Thread(() =>
        {
            using Activity? a = Src.StartActivity("overflow");
            started.Signal();
            release.Wait();
        })).ToList();
        ts.ForEach(t => t.Start());
        started.Wait();
        // A table of 16 slots holds at most 16 of them: the rest are counted, not published.
        Header("overflow-counted", $"slots_full>={n - 16}");
        release.Set();
        ts.ForEach(t => t.Join());
        Churn(64, 4); // dead owners' slots are reclaimed
        OnThread(() =>
        {
            using Activity? a = Src.StartActivity("after-overflow");
            Check("overflow-reclaimed", gettid(), Want(a));
        });
    }

    private static void LabelNoop()
    {
        // With the hook disabled, labels and spans must still just work (no-op).
        using Activity? a = Src.StartActivity("noop");
        bool ok = true;
        try
        {
            using (Label("k", "v"))
                Thread.Sleep(1);
        }
        catch (Exception e)
        {
            ok = false;
            Console.WriteLine("INFO " + e);
        }
        Self("label-noop", ok);
    }

    private static void TwoCopies(string dll)
    {
        // A second copy of the hook in its own load context must not create a second table; it
        // forwards to the copy that owns the table.
#if SPANPROF_REF
        Self("twocopies-owner-start", StartOf(typeof(SpanProf.Label).Assembly)); // the referenced copy owns the table
#endif
        var alc = new AssemblyLoadContext("spanprof-second-copy");
        Assembly asm = alc.LoadFromAssemblyPath(dll);
        Self("twocopies-distinct", !ReferenceEquals(asm, typeof(Program).Assembly), asm.Location);
        bool started = StartOf(asm);
        Self("twocopies-start", started);
        Func<string, string, IDisposable> label = LabelOf(asm);
        OnThread(() =>
        {
            int tid = gettid();
            using Activity? a = Src.StartActivity("copy-span");
            using (var scope = label("copy", "second"))
                Check("twocopies-label", tid, Want(a, ("copy", "second")));
            Check("twocopies-label-undone", tid, Want(a));
        });
        var copies = AppDomain.CurrentDomain.GetAssemblies().Where(IsHook)
            .Select(a => $"{AssemblyLoadContext.GetLoadContext(a)?.Name}:{a.Location}");
        Console.WriteLine($"INFO hook-assemblies=[{string.Join(",", copies)}]");
    }
}
