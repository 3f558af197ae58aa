// Threads.cs: OS thread ids (as the kernel and a profiler see them) for attributing work to threads.
using System;
using System.IO;
using System.Runtime.InteropServices;

namespace SpanService;

public static partial class Threads
{
    [ThreadStatic] private static int t_tid;

    [DllImport("libc", EntryPoint = "gettid", ExactSpelling = true)]
    private static extern int gettid();

    /* This thread's kernel thread id (in the process's own pid namespace), cached per thread. */
    public static int CurrentTid
    {
        get
        {
            int tid = t_tid;
            if (tid == 0)
                t_tid = tid = Lookup();
            return tid;
        }
    }

    private static int Lookup()
    {
        try
        {
            return gettid();
        }
        catch (Exception e) when (e is DllNotFoundException || e is EntryPointNotFoundException)
        {
            /* /proc/thread-self -> "<pid>/task/<tid>" */
            string? target = Directory.ResolveLinkTarget("/proc/thread-self", false)?.ToString();
            if (target != null && int.TryParse(Path.GetFileName(target), out int tid))
                return tid;
            return -1;
        }
    }
}
