// ProgressFile.cs: the --progress writer the benchmark apps share (LoadGen, SpanLoop): every
// 100 ms a line "NS COUNT" appended to a file, NS the monotonic clock in ns, COUNT the work done
// so far, until stopped. The benchmark scripts cut runs into slices by these lines.
using System;
using System.Diagnostics;
using System.IO;
using System.Threading;
using System.Threading.Tasks;

internal static class ProgressFile
{
    public static async Task Write(string path, Func<long> count, CancellationToken stop)
    {
        using var file = new StreamWriter(path, append: true);
        using var tick = new PeriodicTimer(TimeSpan.FromMilliseconds(100));
        try
        {
            do
            {
                long ns = (long)((double)Stopwatch.GetTimestamp() * 1e9 / Stopwatch.Frequency);
                file.WriteLine($"{ns} {count()}");
                file.Flush();
            } while (await tick.WaitForNextTickAsync(stop));
        }
        catch (OperationCanceledException) { }
    }
}
