// HookCompose: CPU work inside its own spans (new Activity("app-job")) for N seconds, then a line
// naming the startup hooks that were loaded. Run with DOTNET_STARTUP_HOOKS listing spanprof's hook
// and OtherHook.dll (tests/integration/hooks-compose.sh); OtherHook makes spans of its own on a
// thread it starts (OtherHook/StartupHook.cs).
//
// stdout: "ready PID runtime=V" at start; at the end "hooks NAME,..." (the loaded assemblies whose
// name starts with SpanProf.Hook or OtherHook, in load order) and "done N".
using System;
using System.Diagnostics;
using System.Globalization;
using System.Linq;
using System.Runtime.CompilerServices;

internal static class Program
{
    private static int Main(string[] args)
    {
        double seconds = args.Length > 0 ? double.Parse(args[0], CultureInfo.InvariantCulture) : 6;
        Console.WriteLine($"ready {Environment.ProcessId} runtime={Environment.Version}");
        var sw = Stopwatch.StartNew();
        long n = 0;
        while (sw.Elapsed.TotalSeconds < seconds)
        {
            using Activity span = new Activity("app-job").Start();
            n += Burn(300_000);
        }
        var hooks = AppDomain.CurrentDomain.GetAssemblies()
            .Select(a => a.GetName().Name ?? "")
            .Where(s => s.StartsWith("SpanProf.Hook", StringComparison.Ordinal) || s == "OtherHook");
        Console.WriteLine($"hooks {string.Join(",", hooks)}");
        Console.WriteLine($"done {n & 1}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Burn(int k)
    {
        long x = 1;
        for (int i = 0; i < k; i++)
            x = x * 31 + (i ^ (x >> 7));
        return x;
    }
}
