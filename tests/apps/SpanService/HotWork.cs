// HotWork.cs: the CPU-heavy leaf methods whose unique names let tests recognise samples by leaf frame.
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

namespace SpanService;

/*
 * Every hot method has its own copy of the same xorshift loop, so the loop (and therefore every
 * sample taken in it) is in that method's own frame: no shared helper can become the leaf.
 * NoInlining keeps the frame; AggressiveOptimization jits each once, fully optimized, at first
 * call, so there is a single code version (no tier-0 copy or OSR variant) to name.
 */
public static class HotWork
{
    private const MethodImplOptions Hot = MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization;

    private static ulong s_sink;

    /* Iterations per chunk; set once at startup (calibrated or from SPANSERVICE_ITERS). */
    public static long Iters { get; set; } = 1_000_000;

    /* Keeps the loops' results observable so the JIT cannot drop them. */
    public static void Keep(ulong v) => Volatile.Write(ref s_sink, s_sink ^ v);

    [MethodImpl(Hot)]
    public static ulong HotA_InSpan(long iters)
    {
        ulong x = 0x9E3779B97F4A7C15UL ^ (ulong)iters;
        for (long i = 0; i < iters; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x += (ulong)i; }
        return x;
    }

    [MethodImpl(Hot)]
    public static ulong HotB_Outer(long iters)
    {
        ulong x = 0xD1B54A32D192ED03UL ^ (ulong)iters;
        for (long i = 0; i < iters; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x += (ulong)i; }
        return x;
    }

    [MethodImpl(Hot)]
    public static ulong HotB_Inner(long iters)
    {
        ulong x = 0xAEF17502108EF2D9UL ^ (ulong)iters;
        for (long i = 0; i < iters; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x += (ulong)i; }
        return x;
    }

    [MethodImpl(Hot)]
    public static ulong HotLabelled(long iters)
    {
        ulong x = 0xF1357AEA2E62A9C5UL ^ (ulong)iters;
        for (long i = 0; i < iters; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x += (ulong)i; }
        return x;
    }

    [MethodImpl(Hot)]
    public static ulong HotUnlabelled(long iters)
    {
        ulong x = 0x8CB92BA72F3D8DD7UL ^ (ulong)iters;
        for (long i = 0; i < iters; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x += (ulong)i; }
        return x;
    }

    [MethodImpl(Hot)]
    public static ulong HotNoSpan(long iters)
    {
        ulong x = 0xABC98388FB8FAC03UL ^ (ulong)iters;
        for (long i = 0; i < iters; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x += (ulong)i; }
        return x;
    }

    /* Called from code generated per request (/work/codegen): its caller is a new compiled
     * Expression each time, and `seed` (a constant of that expression) keeps them all different. */
    [MethodImpl(Hot)]
    public static ulong HotCodegen(long iters, long seed)
    {
        ulong x = 0xC2B2AE3D27D4EB4FUL ^ (ulong)seed;
        for (long i = 0; i < iters; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x += (ulong)i; }
        return x;
    }

    /* Same loop under a name no test looks for: used only to size the chunks at startup. */
    [MethodImpl(Hot)]
    public static ulong CalibrationLoop(long iters)
    {
        ulong x = 0x94D049BB133111EBUL ^ (ulong)iters;
        for (long i = 0; i < iters; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x += (ulong)i; }
        return x;
    }

    /* Jits every hot method before the service listens, so each is in the perf map from the start. */
    public static void JitAll()
    {
        Keep(HotA_InSpan(1) ^ HotB_Outer(1) ^ HotB_Inner(1) ^ HotLabelled(1) ^ HotUnlabelled(1) ^ HotNoSpan(1));
    }

    /*
     * Iterations that take chunkUs microseconds of CPU on this machine: the best of several
     * timed runs, so a preempted run does not shrink the chunk.
     */
    public static long Calibrate(int chunkUs)
    {
        const long probe = 200_000;
        Keep(CalibrationLoop(probe));
        double bestNsPerIter = double.MaxValue;
        for (int round = 0; round < 7; round++)
        {
            long t0 = Stopwatch.GetTimestamp();
            Keep(CalibrationLoop(probe));
            double ns = Stopwatch.GetElapsedTime(t0).TotalMilliseconds * 1e6;
            if (ns / probe < bestNsPerIter)
                bestNsPerIter = ns / probe;
        }
        long iters = (long)(chunkUs * 1000.0 / bestNsPerIter);
        return iters < 1000 ? 1000 : iters;
    }
}
