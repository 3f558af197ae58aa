// LeafCall: a small method the JIT compiles without a frame (Mix: no push rbp / mov rbp, rsp),
// called from two callers in a known ratio: CallerA calls it three times for every call from
// CallerB, so 75 % of Mix's samples belong under CallerA and 25 % under CallerB. A frame-pointer
// walk from inside Mix skips its caller (Main -> Mix); the profiler must put it back.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

internal static class Program
{
    private const int Rounds = 100_000;
    private const ulong Divisor = 0x1234567;
    private static ulong s_sink;

    private static int Main(string[] args)
    {
        double seconds = args.Length > 0 ? double.Parse(args[0], System.Globalization.CultureInfo.InvariantCulture) : 10;
        Console.WriteLine($"pid {Environment.ProcessId}");
        long end = Stopwatch.GetTimestamp() + (long)(seconds * Stopwatch.Frequency);
        bool ready = false;
        while (Stopwatch.GetTimestamp() < end)
        {
            s_sink += CallerA(s_sink);
            s_sink += CallerB(s_sink);
            if (!ready)
            {
                ready = true;
                Console.WriteLine("ready");
                Console.Out.Flush();
            }
        }
        Console.WriteLine($"done {s_sink & 0xFF}");
        return 0;
    }

    // AggressiveOptimization: fully optimized at once (no tier 0, no OSR), so the shape of every
    // method is the same from the first sample to the last. The callers loop and call: framed.
    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    private static ulong CallerA(ulong x)
    {
        for (int i = 0; i < Rounds; i++)
        {
            x = Mix(x, Divisor);
            x = Mix(x + 1, Divisor);
            x = Mix(x + 2, Divisor);
        }
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    private static ulong CallerB(ulong x)
    {
        for (int i = 0; i < Rounds; i++)
            x = Mix(x + 3, Divisor);
        return x;
    }

    // The JIT (x64, checked on .NET 10.0.12) gives a method no frame only when it is optimized,
    // has at most 16 bytes of IL, no loop, at most 3 basic blocks and fewer than 2 calls: so Mix
    // is straight-line, and its time goes to two 64-bit divisions.
    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    private static ulong Mix(ulong x, ulong d)
    {
        return (x * 3 + 0x7F4A7C15u) / d ^ x % (d + 2);
    }
}
