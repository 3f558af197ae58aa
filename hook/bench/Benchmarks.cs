// Benchmarks.cs: what the hook costs per ExecutionContext switch, per span and per label scope.
//
// Every benchmark runs twice, Hook=false (assembly loaded, hook never started) and Hook=true
// (Hook.EnsureStarted in GlobalSetup). BenchmarkDotNet runs each case in its own process, so the two
// never share a started hook.
using System;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;
using BenchmarkDotNet.Attributes;
using BenchmarkDotNet.Running;
using SpanProfHook;

public class EcSwitch
{
    private const int Hops = 1000;
    private static readonly ActivitySource Src = new("SpanProf.Bench");
    private static readonly ContextCallback Noop = _ => { };
    private ExecutionContext? _spanCtx;
    private ActivityListener? _listener;

    [Params(false, true)]
    public bool Hook;

    [GlobalSetup]
    public void Setup()
    {
        _listener = new ActivityListener
        {
            ShouldListenTo = s => s.Name == "SpanProf.Bench",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        };
        ActivitySource.AddActivityListener(_listener);
        if (Hook && !SpanProfHook.Hook.EnsureStarted("bench"))
            throw new InvalidOperationException("hook did not start");
        // A context holding a span (and, with the hook, its state), captured on another thread so
        // the benchmark thread itself stays on the default context.
        _spanCtx = Task.Run(() =>
        {
            Activity? a = Src.StartActivity("request");
            using (Hook ? new SpanProf.Label("tenant", "acme") : default)
                return ExecutionContext.Capture();
        }).Result;
    }

    [GlobalCleanup]
    public void Cleanup() => _listener?.Dispose();

    /// <summary>Two switches per op: default -> span context -> default.</summary>
    [Benchmark]
    public void ExecutionContextRun() => ExecutionContext.Run(_spanCtx!, Noop, null);

    /// <summary>Thread-pool hop per op: the continuation restores the span context on a pool
    /// thread (switch in), and the pool resets it when the work item ends (switch out).</summary>
    [Benchmark(OperationsPerInvoke = Hops)]
    public async Task AwaitYield()
    {
        using Activity? a = Src.StartActivity("yield");
        for (int i = 0; i < Hops; i++)
            await Task.Yield();
    }

    /// <summary>Span start + stop: two Activity.Current sets, each a new state (record encoded).</summary>
    [Benchmark]
    public void SpanStartStop()
    {
        using Activity? a = Src.StartActivity("op");
    }

    /// <summary>Child span under a parent: the local root is found by walking the parents.</summary>
    [Benchmark]
    public void ChildSpanStartStop()
    {
        ExecutionContext.Run(_spanCtx!, static _ =>
        {
            using Activity? a = Src.StartActivity("child");
        }, null);
    }
}

public class Callback
{
    private State? _state;

    [GlobalSetup]
    public void Setup()
    {
        if (!SpanProfHook.Hook.EnsureStarted("bench"))
            throw new InvalidOperationException("hook did not start");
        using var listener = new ActivityListener
        {
            ShouldListenTo = _ => true,
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        };
        ActivitySource.AddActivityListener(listener);
        using var src = new ActivitySource("SpanProf.Bench.Callback");
        using Activity? a = src.StartActivity("GET /work/a");
        _state = new State(a, null);
        Hook.Publish(_state); // claims this thread's slot outside the measurement
    }

    /// <summary>What the AsyncLocal callback does per switch: copy the record, valid-flag protocol.</summary>
    [Benchmark]
    public void PublishSpan() => Hook.Publish(_state);

    [Benchmark]
    public void PublishNoSpan() => Hook.Publish(null);

    /// <summary>The full fence inside Publish, alone.</summary>
    [Benchmark]
    public void MemoryBarrier() => Interlocked.MemoryBarrier();
}

public class Labels
{
    [GlobalSetup]
    public void Setup()
    {
        if (!SpanProfHook.Hook.EnsureStarted("bench"))
            throw new InvalidOperationException("hook did not start");
    }

    /// <summary>Label scope enter + exit (two context changes, one new state each way).</summary>
    [Benchmark]
    public void LabelScope()
    {
        using (new SpanProf.Label("tenant", "acme"))
        {
        }
    }
}

public static class Program
{
    public static void Main(string[] args) => BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args);
}
