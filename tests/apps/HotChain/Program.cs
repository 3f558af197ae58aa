// HotChain: a .NET app with a known hot call chain (Main -> Outer -> Middle -> HotLoop) for profiler tests.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

internal static class Program
{
    // Modes:
    //   jit  (default) Main -> Outer -> Middle -> HotLoop; HotLoop is JIT-compiled managed code,
    //        optimized from the start (no tier 0, no OSR), so every frame is on the FP chain.
    //   osr  Main -> Outer -> Middle -> HotLoopOsr, left to tiering: tier 0, then an OSR method.
    //   r2r  Main -> Outer -> Middle -> R2RLoop -> string.GetHashCode(ReadOnlySpan<char>) ->
    //        Marvin.ComputeHash32: precompiled ReadyToRun code in System.Private.CoreLib. Each call
    //        hashes up to 1 GiB, and there are fewer calls than the tiering call-count threshold
    //        (30), so the R2R code is never replaced by a tier-1 rejit: samples land in [PreJIT]
    //        code for the first ~15 s. Frame-pointer stacks seen on .NET 10.0.12:
    //        Marvin.ComputeHash32[PreJIT] <- R2RLoop <- Middle <- Outer <- Main (GetHashCode
    //        tail-calls Marvin, so its own frame is absent). R2R code is named only by the
    //        jitdump (PerfMapType 1 or 2), never by the perf map.
    //   span jit, all of it inside one span started as Main's first statement (run with the hook in
    //        DOTNET_STARTUP_HOOKS): prints "span <span_id>", so a test can ask that every sample of
    //        Outer carries it, from the very first (tests/integration/procevents.sh).
    private static readonly ActivitySource Src = new("HotChain");

    private static int Main(string[] args)
    {
        using Activity? span = args.Length > 1 && args[1] == "span" ? StartSpan() : null;
        double seconds = 10;
        string mode = "jit";
        if (args.Length > 0 && !double.TryParse(args[0], System.Globalization.NumberStyles.Float,
                System.Globalization.CultureInfo.InvariantCulture, out seconds))
        {
            Console.Error.WriteLine("usage: HotChain [seconds=10] [jit|r2r|osr|span]");
            return 2;
        }
        if (args.Length > 1)
            mode = args[1];
        if (mode != "jit" && mode != "r2r" && mode != "osr" && mode != "span")
        {
            Console.Error.WriteLine($"HotChain: unknown mode '{mode}' (jit|r2r|osr|span)");
            return 2;
        }
        Console.WriteLine($"pid {Environment.ProcessId}");
        if (span != null)
            Console.WriteLine($"span {span.SpanId.ToHexString()}");
        double result = Outer(seconds, mode == "span" ? "jit" : mode);
        Console.WriteLine($"done {result:F3}");
        return 0;
    }

    private static Activity? StartSpan()
    {
        ActivitySource.AddActivityListener(new ActivityListener
        {
            ShouldListenTo = s => s.Name == "HotChain",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        });
        return Src.StartActivity("hotchain-span");
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static double Outer(double seconds, string mode)
    {
        // Some work of its own so the frame is not trivial.
        var sw = Stopwatch.StartNew();
        double total = 0;
        for (int round = 0; sw.Elapsed.TotalSeconds < seconds; round++)
            total += Middle(seconds - sw.Elapsed.TotalSeconds, mode, round) * 0.5;
        return total;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static double Middle(double remaining, string mode, int round)
    {
        if (round == 0)
        {
            Console.WriteLine("ready");
            Console.Out.Flush();
        }
        double scale = 1.0 + (round & 7);
        return mode switch
        {
            "r2r" => R2RLoop(remaining) * scale,
            "osr" => HotLoopOsr(remaining) / scale,
            _ => HotLoop(remaining) / scale,
        };
    }

    // Floating-point and integer work; returns after about `remaining` seconds (at most 1 s per
    // call so Outer/Middle stay on the stack while HotLoop dominates the CPU).
    // AggressiveOptimization: jitted fully optimized at once. Left to tiering, this long-running
    // loop would be replaced by an OSR (on-stack replacement) method, and a frame-pointer walk
    // from an OSR frame shows the method's own tier-0 code where its caller should be (checked on
    // .NET 10.0.12, mode "osr": HotLoopBody[OptimizedTier1OSR] <- HotLoopBody[QuickJitted] <-
    // Middle <- Outer <- Main, HotLoopOsr missing).
    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    private static double HotLoop(double remaining) => HotLoopBody(remaining);

    // Same body, left to tiered compilation (tier 0, then OSR).
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static double HotLoopOsr(double remaining) => HotLoopBody(remaining);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static double HotLoopBody(double remaining)
    {
        long deadline = Stopwatch.GetTimestamp() + (long)(Math.Min(remaining, 1.0) * Stopwatch.Frequency);
        double x = 1.0001, acc = 0;
        ulong h = 0x9E3779B97F4A7C15UL;
        while (Stopwatch.GetTimestamp() < deadline)
        {
            for (int i = 0; i < 100_000; i++)
            {
                x = x * 1.0000001 + 1e-9;
                acc += Math.Sqrt(x + i) * 0.5;
                h ^= h << 13;
                h ^= h >> 7;
                h ^= h << 17;
                acc += (double)(h & 0xFF) * 1e-12;
            }
        }
        return acc;
    }

    // r2r mode: a 1 GiB region that is never written reads as the kernel's shared zero page, so
    // hashing it costs CPU but almost no memory (RSS stays ~30 MB).
    private static unsafe char* s_region;
    private const int RegionChars = 512 * 1024 * 1024;
    private static int s_r2rCalls;
    private static double s_charsPerSecond = 5e8;	// refined after every call
    // Below the tiering call-count threshold (TC_CallCountThreshold, 30): the precompiled code of
    // string.GetHashCode / Marvin.ComputeHash32 is never replaced by a tier-1 rejit. At up to
    // ~0.5-1 s per call this keeps the CPU in [PreJIT] code for about 15 s; after that R2RLoop idles.
    private const int MaxR2RCalls = 25;

    // Spends its time inside CoreLib's precompiled Marvin hash (string.GetHashCode(ReadOnlySpan<char>)).
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static unsafe double R2RLoop(double remaining)
    {
        if (s_region == null)
            s_region = (char*)NativeMemory.Alloc((nuint)RegionChars * sizeof(char));
        if (s_r2rCalls >= MaxR2RCalls)
        {
            if (s_r2rCalls++ == MaxR2RCalls)
                Console.WriteLine("r2r budget exhausted: idling");
            Thread.Sleep((int)(Math.Min(remaining, 1.0) * 1000));
            return 0;
        }
        s_r2rCalls++;
        // Size the call to the time left (at most 1 s) so the run ends on time.
        double want = Math.Min(remaining, 1.0) * s_charsPerSecond;
        int len = (int)Math.Clamp(want, 1 << 20, RegionChars);
        long t0 = Stopwatch.GetTimestamp();
        int h = string.GetHashCode(new ReadOnlySpan<char>(s_region, len));
        double dt = (Stopwatch.GetTimestamp() - t0) / (double)Stopwatch.Frequency;
        if (dt > 0.001)
            s_charsPerSecond = len / dt;
        return h & 0xFFFF;
    }
}
