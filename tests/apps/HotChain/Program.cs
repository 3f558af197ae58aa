// HotChain: a .NET app with a known hot call chain (Main -> Outer -> Middle -> HotLoop) for profiler tests.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

internal static class Program
{
    // Modes:
    //   jit  (default) Main -> Outer -> Middle -> HotLoop; HotLoop is JIT-compiled managed code.
    //   r2r  Main -> Outer -> Middle -> R2RLoop -> string.GetHashCode (Marvin hashing, precompiled
    //        ReadyToRun code in System.Private.CoreLib). Each call hashes a large string, and the
    //        number of calls stays below the tiering call-count threshold (30), so the R2R code is
    //        never replaced by a tier-1 rejit and samples land in [PreJIT] code.
    private static int Main(string[] args)
    {
        double seconds = 10;
        string mode = "jit";
        if (args.Length > 0 && !double.TryParse(args[0], System.Globalization.NumberStyles.Float,
                System.Globalization.CultureInfo.InvariantCulture, out seconds))
        {
            Console.Error.WriteLine("usage: HotChain [seconds=10] [jit|r2r]");
            return 2;
        }
        if (args.Length > 1)
            mode = args[1];
        if (mode != "jit" && mode != "r2r")
        {
            Console.Error.WriteLine($"HotChain: unknown mode '{mode}' (jit|r2r)");
            return 2;
        }
        Console.WriteLine($"pid {Environment.ProcessId}");
        double result = Outer(seconds, mode);
        Console.WriteLine($"done {result:F3}");
        return 0;
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
        return mode == "r2r" ? R2RLoop(remaining) * scale : HotLoop(remaining) / scale;
    }

    // Floating-point and integer work; returns after about `remaining` seconds (at most 1 s per
    // call so Outer/Middle stay on the stack while HotLoop dominates the CPU).
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static double HotLoop(double remaining)
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

    private static string? s_big;
    private static int s_r2rCalls;
    private const int MaxR2RCalls = 20;	// below the default TC_CallCountThreshold of 30

    // Spends its time inside CoreLib's precompiled Marvin hash (string.GetHashCode).
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static double R2RLoop(double remaining)
    {
        if (s_big == null)
        {
            // 200 M chars (400 MB): one GetHashCode call takes a few hundred ms.
            s_big = new string('x', 200_000_000);
        }
        if (s_r2rCalls >= MaxR2RCalls)
        {
            // Out of R2R budget: idle rather than let the method tier up.
            System.Threading.Thread.Sleep((int)(Math.Min(remaining, 1.0) * 1000));
            return 0;
        }
        s_r2rCalls++;
        return s_big.GetHashCode() & 0xFFFF;
    }
}
