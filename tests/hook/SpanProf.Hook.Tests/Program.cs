// Program.cs: `dotnet SpanProf.Hook.Tests.dll child` is a fresh process for DisableTests: it starts the
// hook (faults come from SPANPROF_HOOK_FAULT), does what an app does (a span, labels, pool work; none
// of it may throw), and prints what it sees of its own table as one line of key=value facts.
using System;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using SpanProfHook;

namespace SpanProfHookTests
{
    public static unsafe class Program
    {
        public static int Main(string[] args)
        {
            if (args.Length < 1 || args[0] != "child")
            {
                Console.Error.WriteLine("usage: SpanProf.Hook.Tests child [existing-table]   (the tests run this; use dotnet test)");
                return 2;
            }
            if (args.Length > 1 && args[1] == "existing-table")
                ForgeTable();
            bool started = SpanProfHook.Hook.EnsureStarted("child");
            bool threw = false;
            try
            {
                // What an app does, in an order that claims a slot before each fault site is reached.
                Activity a = new Activity("child-span").Start();           // span-change, switch
                using (new SpanProf.Label("k", "v"))                         // label
                    Thread.Sleep(1);                                         // label-end at Dispose
                Task.Run(() => { using (new SpanProf.Label("pool", "1")) Thread.Sleep(1); }).Wait();
                a.Stop();
                new Thread(() => { using (new SpanProf.Label("thread", "1")) { } }).Start();
            }
            catch (Exception e)
            {
                threw = true;
                Console.WriteLine("threw " + e);
            }
            Thread.Sleep(50);
            Table? t = SpanProfHook.Hook.CurrentTable;
            int tables = File.ReadAllLines("/proc/self/maps").Count(l => l.Contains("/memfd:spanprof-ctx", StringComparison.Ordinal));
            int claimed = 0, everClaimed = 0;
            long flags = -1;
            if (t != null)
            {
                flags = *(uint*)(t.Base + Table.OffFlags);
                for (uint i = 0; i < t.SlotCount; i++)
                {
                    ulong w = *(ulong*)t.Slot(i);
                    if ((uint)w != 0)
                        claimed++;
                    if ((w & Table.GenMask) != 0)
                        everClaimed++;
                }
            }
            Console.WriteLine($"facts started={started} active={SpanProfHook.Hook.IsActive} threw={threw} tables={tables} " +
                $"flags={flags} claimed={claimed} ever_claimed={everClaimed}");
            Console.WriteLine("done");
            return 0;
        }

        // Another table already in the process (a second copy's, or anything with that name).
        private static void ForgeTable()
        {
            byte* name = stackalloc byte[32];
            Native.FormatPathLiteral(name, Table.MemfdName);
            int fd = Native.memfd_create(name, Native.MFD_CLOEXEC);
            if (fd < 0 || Native.ftruncate(fd, 4096) != 0 ||
                Native.mmap(IntPtr.Zero, 4096, Native.PROT_READ | Native.PROT_WRITE, Native.MAP_SHARED, fd, 0) == new IntPtr(-1))
                throw new Exception("cannot forge a table");
            Native.close(fd);
        }
    }
}
