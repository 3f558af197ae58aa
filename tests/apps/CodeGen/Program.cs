// CodeGen: a .NET app that generates code all the time, as apps with compiled expressions, regex or
// serializers do: every step compiles a new Expression (a DynamicMethod, one more perf map line)
// and runs it in a hot loop. Only the last few delegates stay reachable, and a collection every
// few of them lets the runtime free the others' code: a perf map written afresh holds few
// methods, a growing one all of them.
//
//   CodeGen RATE BUSY_S [RESUME_FILE BUSY2_S]
//     RATE       compiled expressions per second
//     BUSY_S     seconds of that
//     then, with RESUME_FILE: "idle" (asleep, nothing sampled) until RESUME_FILE exists, then
//     "busy" for BUSY2_S seconds more.
using System;
using System.Diagnostics;
using System.IO;
using System.Linq.Expressions;
using System.Runtime.CompilerServices;
using System.Threading;

internal static class Program
{
    private const int Keep = 64;	// delegates kept reachable

    private static int Main(string[] args)
    {
        if (args.Length < 2 || !double.TryParse(args[0], System.Globalization.NumberStyles.Float,
                System.Globalization.CultureInfo.InvariantCulture, out double rate) ||
            !double.TryParse(args[1], System.Globalization.NumberStyles.Float,
                System.Globalization.CultureInfo.InvariantCulture, out double busy))
        {
            Console.Error.WriteLine("usage: CodeGen RATE BUSY_S [RESUME_FILE BUSY2_S]");
            return 2;
        }
        Console.WriteLine($"pid {Environment.ProcessId}");
        long made = 0, sum = 0;
        sum += Busy(rate, busy, ref made);
        if (args.Length >= 4)
        {
            Console.WriteLine($"idle {made}");
            while (!File.Exists(args[2]))
                Thread.Sleep(100);
            Console.WriteLine("busy");
            sum += Busy(rate, double.Parse(args[3], System.Globalization.CultureInfo.InvariantCulture), ref made);
        }
        Console.WriteLine($"done {made} {sum}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Busy(double rate, double seconds, ref long made)
    {
        var keep = new Func<long, long>[Keep];
        var clock = Stopwatch.StartNew();
        long sum = 0, n = 0;
        while (clock.Elapsed.TotalSeconds < seconds)
        {
            var f = Compile(made);
            keep[made++ % Keep] = f;
            // The others' code is freed once they are collected. This app allocates little, so
            // without this a collection is rare (gen0's budget follows the cache size) and
            // nearly all of them would stay live.
            if (made % Keep == 0)
                GC.Collect();
            // Run it until the next one is due (this call's own pace).
            double next = ++n / rate;
            while (clock.Elapsed.TotalSeconds < next && clock.Elapsed.TotalSeconds < seconds)
                sum += Run(f, sum);
        }
        return sum;
    }

    // x => x * 31 + n ^ (x >> 3): a new method every time.
    private static Func<long, long> Compile(long n)
    {
        var x = Expression.Parameter(typeof(long), "x");
        var body = Expression.ExclusiveOr(
            Expression.Add(Expression.Multiply(x, Expression.Constant(31L)), Expression.Constant(n)),
            Expression.RightShift(x, Expression.Constant(3)));
        return Expression.Lambda<Func<long, long>>(body, x).Compile();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Run(Func<long, long> f, long seed)
    {
        long s = seed;
        for (int i = 0; i < 20000; i++)
            s = f(s);
        return s;
    }
}
