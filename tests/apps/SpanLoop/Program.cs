// SpanLoop: a CPU-bound .NET load with spans, awaits and a work counter, for benchmarks that need
// to count work done in slices of a second (scripts/bench-slices.py). No network, no timers: the
// work per unit is fixed, so units per CPU-second move only with what the process is made to pay.
using System;
using System.Diagnostics;
using System.IO;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;

internal static partial class Program
{
    private const string Usage =
        "usage: SpanLoop [--workers N] [--chunk-us US] [--duration SEC] [--progress FILE] [--duty P]\n" +
        "       SpanLoop --handoff [--workers N] [--chunk-us US] [--duration SEC] [--progress FILE]\n" +
        "  N async workers (default 1), each repeating one unit: a span (ActivitySource \"SpanLoop\"),\n" +
        "  a compute chunk of about US microseconds (default 100, sized once at start), an await that\n" +
        "  resumes on the thread pool, a second chunk, the span's end. --progress: every 100 ms, a line\n" +
        "  \"NS UNITS\" appended to FILE (CLOCK_MONOTONIC nanoseconds, units done so far). Runs for SEC\n" +
        "  seconds (default 60), then prints the units done. --duty: each worker sleeps after a unit so\n" +
        "  that it is busy P percent of the time (default 100: no sleep), for many light processes.\n" +
        "  --handoff: N threads (default 4) in a ring pass N/2 tokens along, a span and a chunk per\n" +
        "  hand-off, each thread blocking for its next token (Handoff.cs): a unit is a hand-off.\n" +
        "  Exit 2 on bad usage.";

    private static readonly ActivitySource Src = new("SpanLoop");
    private static long[] s_done = Array.Empty<long>();	// per worker, 8 longs apart (own cache line)
    private static long s_iters;
    private static double s_duty = 100;

    private static async Task<int> Main(string[] args)
    {
        int workers = 0, chunkUs = 100;
        bool handoff = false;
        double seconds = 60;
        string? progress = null;
        try
        {
            for (int i = 0; i < args.Length; i++)
            {
                string a = args[i];
                string Value() => i + 1 < args.Length ? args[++i] : throw new ArgumentException($"{a} needs a value");
                switch (a)
                {
                    case "--workers": workers = (int)Number(Value(), a, 1, 256); break;
                    case "--chunk-us": chunkUs = (int)Number(Value(), a, 1, 1_000_000); break;
                    case "--duration": seconds = Number(Value(), a, 0.1, 86400); break;
                    case "--progress": progress = Value(); break;
                    case "--duty": s_duty = Number(Value(), a, 0.01, 100); break;
                    case "--handoff": handoff = true; break;
                    default: throw new ArgumentException($"unknown argument '{a}'");
                }
            }
        }
        catch (ArgumentException e)
        {
            Console.Error.WriteLine($"spanloop: {e.Message}");
            Console.Error.WriteLine(Usage);
            return 2;
        }
        ActivitySource.AddActivityListener(new ActivityListener
        {
            ShouldListenTo = s => s.Name == "SpanLoop",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        });
        s_iters = Calibrate(chunkUs);
        if (handoff)
            return await RunHandoff(workers > 0 ? System.Math.Max(2, workers) : 4, seconds, progress);
        workers = System.Math.Max(1, workers);
        s_done = new long[workers * 8];
        using var stop = new CancellationTokenSource(TimeSpan.FromSeconds(seconds));
        var tasks = new Task[workers];
        for (int w = 0; w < workers; w++)
        {
            int slot = w * 8;
            tasks[w] = Task.Run(() => Worker(slot, stop.Token));
        }
        Console.WriteLine($"pid {Environment.ProcessId} ready");
        Console.Out.Flush();
        Task report = progress != null ? ProgressFile.Write(progress, Total, stop.Token) : Task.CompletedTask;
        await Task.WhenAll(tasks);
        await report;
        Console.WriteLine($"units {Total()}");
        return 0;
    }

    private static async Task Worker(int slot, CancellationToken stop)
    {
        double keep = 0;
        while (!stop.IsCancellationRequested)
        {
            long t0 = Stopwatch.GetTimestamp();
            using (Activity? span = Src.StartActivity("unit"))
            {
                keep += Chunk(s_iters);
                await Task.Yield();
                keep += Chunk(s_iters);
            }
            Volatile.Write(ref s_done[slot], s_done[slot] + 1);
            if (s_duty < 100)
            {
                double busyMs = Stopwatch.GetElapsedTime(t0).TotalMilliseconds;
                try { await Task.Delay(TimeSpan.FromMilliseconds(Math.Max(1, busyMs * (100 - s_duty) / s_duty)), stop); }
                catch (OperationCanceledException) { break; }
            }
        }
        GC.KeepAlive(keep);
    }

    private static long Total()
    {
        long t = 0;
        for (int i = 0; i < s_done.Length; i += 8)
            t += Volatile.Read(ref s_done[i]);
        return t;
    }

    // Integer and floating-point work, the same every call.
    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    private static double Chunk(long iters)
    {
        double x = 1.0001, acc = 0;
        ulong h = 0x9E3779B97F4A7C15UL;
        for (long i = 0; i < iters; i++)
        {
            h = (h ^ (ulong)i) * 0x100000001B3UL;
            x = x * 1.0000001 + (h & 0xff) * 1e-9;
            acc += x;
        }
        return acc + h;
    }

    // Iterations that take chunkUs microseconds here: the best of several timed runs.
    private static long Calibrate(int chunkUs)
    {
        const long probe = 200_000;
        double best = double.MaxValue;
        for (int r = 0; r < 15; r++)
        {
            long t0 = Stopwatch.GetTimestamp();
            Chunk(probe);
            best = Math.Min(best, Stopwatch.GetElapsedTime(t0).TotalMilliseconds * 1e6 / probe);
        }
        return Math.Max(1, (long)(chunkUs * 1000.0 / best));
    }

    private static double Number(string s, string what, double min, double max)
    {
        if (!double.TryParse(s, System.Globalization.NumberStyles.Float, System.Globalization.CultureInfo.InvariantCulture, out double v) || v < min || v > max)
            throw new ArgumentException($"{what}: expected a number in [{min}, {max}], got '{s}'");
        return v;
    }
}
