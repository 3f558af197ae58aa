// Background.cs: CPU work outside any span, on a dedicated thread, at a fixed low duty cycle.
using System;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;
using Microsoft.Extensions.Hosting;

namespace SpanService;

/*
 * Runs HotNoSpan() in chunks and sleeps between them so it uses `duty` percent of one CPU.
 * The thread is started with ExecutionContext flow suppressed, so no Activity, label or other
 * AsyncLocal of the starting code can leak into it: every sample in HotNoSpan must carry no span.
 * It runs inside a user label scope (worker=nospan) of its own: labels outside any span still
 * reach the samples, the way Go's pprof.Do labels do.
 */
public sealed class NoSpanWorker : BackgroundService
{
    private readonly int _duty;
    private Thread? _thread;
    private volatile int _tid;
    private long _chunks;
    private long _spanLeaks;

    public NoSpanWorker(int dutyPercent) => _duty = Math.Clamp(dutyPercent, 0, 100);

    public int Tid => _tid;
    public long Chunks => Interlocked.Read(ref _chunks);
    /* Chunks that found an Activity current (must stay 0). */
    public long SpanLeaks => Interlocked.Read(ref _spanLeaks);

    protected override Task ExecuteAsync(CancellationToken stop)
    {
        if (_duty == 0)
            return Task.CompletedTask;
        var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using (ExecutionContext.SuppressFlow())
        {
            _thread = new Thread(() => Run(stop, done)) { IsBackground = true, Name = "nospan-worker" };
            _thread.Start();
        }
        return done.Task;
    }

    private void Run(CancellationToken stop, TaskCompletionSource done)
    {
        _tid = Threads.CurrentTid;
#if SPANPROF_HOOK
        using var scope = new global::SpanProf.Label("worker", "nospan");
#endif
        try
        {
            while (!stop.IsCancellationRequested)
            {
                if (Activity.Current != null)
                    Interlocked.Increment(ref _spanLeaks);
                long t0 = Stopwatch.GetTimestamp();
                HotWork.Keep(HotWork.HotNoSpan(HotWork.Iters));
                Interlocked.Increment(ref _chunks);
                double busyMs = Stopwatch.GetElapsedTime(t0).TotalMilliseconds;
                int sleepMs = (int)Math.Ceiling(busyMs * (100 - _duty) / _duty);
                stop.WaitHandle.WaitOne(Math.Max(sleepMs, 1));
            }
        }
        finally
        {
            done.TrySetResult();
        }
    }
}
