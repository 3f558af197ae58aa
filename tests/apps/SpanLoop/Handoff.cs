// Handoff.cs: SpanLoop --handoff, a context-switch-heavy load for the off-CPU benchmarks
// (scripts/bench-slices.py TARGET=handoff, scripts/bench-offcpu.sh LOAD=handoff). N threads in a
// ring pass N/2 tokens along: a thread waits for a token in its inbox (Monitor.Wait: a futex
// block when none is there), computes a short chunk inside a span, and hands the token to the
// next thread (Monitor.Pulse: a wake-up). Each thread waits at three places in turn (three
// methods, three stack depths), as a service's threads block in several places. A unit is one
// hand-off.
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;

internal static partial class Program
{
    private sealed class Inbox
    {
        public int Tokens;
    }

    private static Inbox[] s_inbox = System.Array.Empty<Inbox>();

    private static async Task<int> RunHandoff(int threads, double seconds, string? progress)
    {
        s_inbox = new Inbox[threads];
        for (int i = 0; i < threads; i++)
            s_inbox[i] = new Inbox();
        for (int i = 0; i < threads; i += 2)
            s_inbox[i].Tokens = 1;	// threads / 2 tokens, one every other thread
        s_done = new long[threads * 8];
        using var stop = new CancellationTokenSource(System.TimeSpan.FromSeconds(seconds));
        var ring = new Thread[threads];
        for (int i = 0; i < threads; i++)
        {
            int me = i;
            ring[i] = new Thread(() => Hop(me, threads, stop.Token)) { Name = $"hop{i}", IsBackground = true };
            ring[i].Start();
        }
        System.Console.WriteLine($"pid {System.Environment.ProcessId} ready");
        System.Console.Out.Flush();
        Task report = progress != null ? ProgressFile.Write(progress, Total, stop.Token) : Task.CompletedTask;
        try { await Task.Delay(System.Threading.Timeout.Infinite, stop.Token); }
        catch (System.OperationCanceledException) { }
        await report;
        System.Console.WriteLine($"units {Total()}");
        return 0;
    }

    private static void Hop(int me, int threads, CancellationToken stop)
    {
        Inbox next = s_inbox[(me + 1) % threads];
        double keep = 0;
        for (long n = 0; !stop.IsCancellationRequested; n++)
        {
            using (Activity? span = Src.StartActivity("hop"))
            {
                switch (n % 3)
                {
                    case 0: WaitA(me); break;
                    case 1: WaitB(me, 1); break;
                    default: WaitC(me, 1, 2); break;
                }
                keep += Chunk(s_iters);
                lock (next)
                {
                    next.Tokens++;
                    Monitor.Pulse(next);
                }
            }
            Volatile.Write(ref s_done[me * 8], s_done[me * 8] + 1);
        }
        System.GC.KeepAlive(keep);
    }

    // Three places to wait at, each its own frame and stack depth.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void WaitA(int me) => Take(s_inbox[me]);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void WaitB(int me, int depth)
    {
        if (depth > 0)
            WaitB(me, depth - 1);
        else
            Take(s_inbox[me]);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void WaitC(int me, int depth, int pad)
    {
        if (depth > 0)
            WaitC(me, depth - 1, pad);
        else
            WaitB(me, pad);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Take(Inbox box)
    {
        lock (box)
        {
            while (box.Tokens == 0)
                Monitor.Wait(box, 100);	// the timeout only lets a stopped ring end
            box.Tokens--;
        }
    }
}
