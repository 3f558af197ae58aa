// OffCpu: one thread per way a .NET thread blocks synchronously, each blocking inside its own root
// span (ActivitySource "OffCpu"), for tests/integration/offcpu.sh. Every block is timed by the app
// itself (Stopwatch around the blocking call only, less the thread's CPU time and run-queue wait in
// it from /proc/thread-self/schedstat: spinning and waiting for a CPU are not blocking) and the
// sums are the truth file:
//   sleep   Thread.Sleep                                   in span "sleep",  method BlockSleep
//   lock    a contended lock (Monitor)                     in span "lock",   method BlockLock
//   result  sync-over-async: Task.Delay(..).Result         in span "result", method BlockResult
//   socket  a blocking TCP Receive                         in span "socket", method BlockSocket
//   twina   Thread.Sleep                                   in span "twina",  method BlockTwinA
//   twinb   Thread.Sleep                                   in span "twinb",  method BlockTwinB
// twina and twinb run on one thread, one after the other, through the same calls to two methods
// of one body and frame: the thread blocks at the same depth of its stack, with the same
// registers, in both, and only the frames above tell the two places apart. With --twins-deep N
// both block under N frames of one shared method (Deep): what tells them apart is further up.
// Two helper threads block outside any span: HoldLock (holds the lock, sleeping) and ServeSocket
// (waits, then answers the socket). Truth file: one JSON object
//   {"pid": P, "scenarios": {"sleep": {"blocked_ns": N, "blocks": K, "wall_ns": W, "thread_cpu_ns": C,
//    "thread_runq_ns": R}, ...}}   (W: the blocks' wall time; C, R: the scenario thread's CPU time
//    and run-queue wait over the whole scenario)
// written when every scenario is done.
using System;
using System.Diagnostics;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

internal static class Program
{
    private const string Usage =
        "usage: OffCpu --truth FILE [--blocks N] [--block-ms MS] [--delay-ms MS] [--go FIFO]\n" +
        "              [--sleep-on-main] [--twins-rare] [--twins-deep N]\n" +
        "  each scenario blocks N times (default 40) for about MS ms (default 20), after waiting\n" +
        "  --delay-ms (default 1500) outside any span, or with --go until something is written to\n" +
        "  FIFO (blocking opens in WaitGo; other lines start another); the measured sums go to FILE.\n" +
        "  --sleep-on-main: the sleep scenario runs on the main thread, which has blocked since the\n" +
        "  runtime started, not on a thread of its own. --twins-rare: twina blocks 1 ms, 20 times\n" +
        "  before each of twinb's blocks. --twins-deep: the twins block under N frames of one shared\n" +
        "  method. Exit 2 on bad usage.";

    private static readonly ActivitySource Src = new("OffCpu");
    private static readonly object s_lock = new();
    private static int s_blocks = 40, s_blockMs = 20, s_twinDepth;
    private static readonly System.Collections.Concurrent.ConcurrentDictionary<string, long> s_wall = new();

    private static int Main(string[] args)
    {
        string? truth = null, go = null;
        int delayMs = 1500;
        bool sleepOnMain = false, twinsRare = false;
        try
        {
            for (int i = 0; i < args.Length; i++)
            {
                string a = args[i];
                string Value() => i + 1 < args.Length ? args[++i] : throw new ArgumentException($"{a} needs a value");
                switch (a)
                {
                    case "--truth": truth = Value(); break;
                    case "--blocks": s_blocks = int.Parse(Value()); break;
                    case "--block-ms": s_blockMs = int.Parse(Value()); break;
                    case "--delay-ms": delayMs = int.Parse(Value()); break;
                    case "--go": go = Value(); break;
                    case "--sleep-on-main": sleepOnMain = true; break;
                    case "--twins-rare": twinsRare = true; break;
                    case "--twins-deep": s_twinDepth = int.Parse(Value()); break;
                    default: throw new ArgumentException($"unknown argument '{a}'");
                }
            }
            if (truth == null)
                throw new ArgumentException("--truth is required");
        }
        catch (Exception e) when (e is ArgumentException || e is FormatException)
        {
            Console.Error.WriteLine($"offcpu: {e.Message}");
            Console.Error.WriteLine(Usage);
            return 2;
        }
        ActivitySource.AddActivityListener(new ActivityListener
        {
            ShouldListenTo = s => s.Name == "OffCpu",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        });
        Console.WriteLine($"pid {Environment.ProcessId} ready");
        Console.Out.Flush();
        if (go != null)
            WaitGo(go);
        else
        {
            // The profiler finds the hook's table meanwhile. Short sleeps at one place: the
            // off-CPU program keeps the thread's table (none yet, maybe) from the second on.
            var delay = Stopwatch.StartNew();
            while (delay.ElapsedMilliseconds < delayMs)
                Thread.Sleep(10);
        }

        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        int port = ((IPEndPoint)listener.LocalEndpoint).Port;
        var server = new Thread(() => ServeSocket(listener)) { Name = "serve", IsBackground = true };
        server.Start();

        var names = new[] { "sleep", "lock", "result", "socket", "twina", "twinb" };
        var sums = new long[names.Length];
        var sched = new long[names.Length][];
        var threads = new Thread[names.Length];
        var holder = new Thread(HoldLock) { Name = "hold", IsBackground = true };
        var lockTurn = new SemaphoreSlim(0);
        var lockHeld = new SemaphoreSlim(0);
        holder.Start((lockTurn, lockHeld));
        for (int k = 0; k < names.Length; k++)
        {
            int s = k;
            threads[s] = new Thread(() => RunScenario(s)) { Name = names[s] };
            if (!(sleepOnMain && names[s] == "sleep") && names[s] != "twinb")
                threads[s].Start();
        }
        if (sleepOnMain)
            RunScenario(Array.IndexOf(names, "sleep"));
        foreach (var t in threads)
            if (t.ThreadState != System.Threading.ThreadState.Unstarted)
                t.Join();

        void RunScenario(int s)
        {
            int b = Array.IndexOf(names, "twinb");
            if (names[s] == "twina" && twinsRare)
            {
                // twina's blocks short (1 ms), 20 of them before each of twinb's, on this thread
                long[] before = SchedStat();
                for (int i = 0; i < s_blocks; i++)
                {
                    sums[s] += Run("twina", () => BlockTwinA(1), 20);
                    sums[b] += Run("twinb", () => BlockTwinB(s_blockMs), 1);
                }
                long[] after = SchedStat();
                sched[s] = sched[b] = new[] { after[0] - before[0], after[1] - before[1] };
                return;
            }
            RunOne(s);
            if (names[s] == "twina")
                RunOne(b);	// on this thread, after it
        }

        void RunOne(int s)
        {
            long[] before = SchedStat();
            sums[s] = names[s] switch
            {
                "sleep" => Run("sleep", BlockSleep),
                "lock" => Run("lock", () => BlockLock(lockTurn, lockHeld)),
                "result" => Run("result", BlockResult),
                "twina" => Run("twina", () => BlockTwinA(s_blockMs)),
                "twinb" => Run("twinb", () => BlockTwinB(s_blockMs)),
                _ => RunSocket(port),
            };
            long[] after = SchedStat();
            sched[s] = new[] { after[0] - before[0], after[1] - before[1] };
        }

        var sb = new StringBuilder();
        sb.Append($"{{\"pid\": {Environment.ProcessId}, \"scenarios\": {{");
        for (int s = 0; s < names.Length; s++)
            sb.Append($"{(s > 0 ? ", " : "")}\"{names[s]}\": {{\"blocked_ns\": {sums[s]}, \"blocks\": {s_blocks}, " +
                      $"\"wall_ns\": {(s_wall.TryGetValue(names[s], out long w) ? w : 0)}, " +
                      $"\"thread_cpu_ns\": {sched[s][0]}, \"thread_runq_ns\": {sched[s][1]}}}");
        sb.Append("}}\n");
        File.WriteAllText(truth, sb.ToString());
        Console.WriteLine("done");
        return 0;
    }

    // Blocks s_blocks times inside a root span named name. Returns the blocked nanoseconds: per
    // block, the wall time measured around the blocking call less what the thread spent on a CPU
    // and waiting for one in it (schedstat, read around it), which is not blocking.
    private static long Run(string name, Func<long> block, int count = -1)
    {
        long sum = 0;
        for (int i = 0; i < (count < 0 ? s_blocks : count); i++)
        {
            using Activity? span = Src.StartActivity(name);
            long[] s0 = SchedStat();
            long wall = block();
            long[] s1 = SchedStat();
            s_wall.AddOrUpdate(name, wall, (_, v) => v + wall);
            sum += wall - (s1[0] - s0[0]) - (s1[1] - s0[1]);
        }
        return sum;
    }

    // This thread's CPU time and run-queue wait so far (ns), from /proc/thread-self/schedstat: what
    // the scenario's thread did besides blocking, to read the comparison by.
    private static long[] SchedStat()
    {
        try
        {
            string[] f = File.ReadAllText("/proc/thread-self/schedstat").Split(' ');
            return new[] { long.Parse(f[0]), long.Parse(f[1]) };
        }
        catch (IOException)
        {
            return new long[2];
        }
    }

    // Blocks outside any span until the test writes "go" to the FIFO: opening it for reading blocks
    // until a writer opens it. Anything else written ends one block and starts the next, so the test
    // can have a block begin once its profiler is attached.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void WaitGo(string fifo)
    {
        for (int n = 1; ; n++)
        {
            Console.WriteLine($"waiting for go {n}");
            Console.Out.Flush();
            if (File.ReadAllText(fifo).Trim() == "go")
                return;
        }
    }

    private static long Ns(long ticks) => (long)(ticks * (1e9 / Stopwatch.Frequency));

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long BlockSleep()
    {
        long t0 = Stopwatch.GetTimestamp();
        Thread.Sleep(s_blockMs);
        return Ns(Stopwatch.GetTimestamp() - t0);
    }

    // The holder takes the lock, says so, and sleeps holding it; the blocked side waits for it.
    // The twins: one body, compiled optimized at once (no tier whose frame differs from the
    // other's), called the same way.
    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    private static long BlockTwinA(int ms)
    {
        long t0 = Stopwatch.GetTimestamp();
        if (s_twinDepth > 0)
            Deep(s_twinDepth, ms);
        else
            Thread.Sleep(ms);
        return Ns(Stopwatch.GetTimestamp() - t0);
    }

    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    private static long BlockTwinB(int ms)
    {
        long t0 = Stopwatch.GetTimestamp();
        if (s_twinDepth > 0)
            Deep(s_twinDepth, ms);
        else
            Thread.Sleep(ms);
        return Ns(Stopwatch.GetTimestamp() - t0);
    }

    // Sleeps under depth frames of itself (the + 1 keeps each call from being a tail call).
    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    private static int Deep(int depth, int ms)
    {
        if (depth > 0)
            return Deep(depth - 1, ms) + 1;
        Thread.Sleep(ms);
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void HoldLock(object? arg)
    {
        var (turn, held) = ((SemaphoreSlim, SemaphoreSlim))arg!;
        for (;;)
        {
            turn.Wait();
            lock (s_lock)
            {
                held.Release();
                Thread.Sleep(s_blockMs);
            }
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long BlockLock(SemaphoreSlim turn, SemaphoreSlim held)
    {
        long t0 = Stopwatch.GetTimestamp();	// waiting for the holder to take it blocks too
        turn.Release();
        held.Wait();
        lock (s_lock)
        {
            return Ns(Stopwatch.GetTimestamp() - t0);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long BlockResult()
    {
        long t0 = Stopwatch.GetTimestamp();
        int r = Task.Delay(s_blockMs).ContinueWith(_ => 1).Result;
        return Ns(Stopwatch.GetTimestamp() - t0) * r;
    }

    // One request byte in, one reply byte out after s_blockMs, per block.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ServeSocket(TcpListener listener)
    {
        using Socket c = listener.AcceptSocket();
        var b = new byte[1];
        while (c.Receive(b) == 1)
        {
            Thread.Sleep(s_blockMs);
            c.Send(b);
        }
    }

    private static long RunSocket(int port)
    {
        using var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        s.Connect(IPAddress.Loopback, port);
        s.NoDelay = true;
        return Run("socket", () => BlockSocket(s));
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long BlockSocket(Socket s)
    {
        var b = new byte[1] { 1 };
        s.Send(b);
        long t0 = Stopwatch.GetTimestamp();
        int n = s.Receive(b);
        long ns = Ns(Stopwatch.GetTimestamp() - t0);
        if (n != 1)
            throw new IOException("server closed");
        return ns;
    }
}
