// CoreLibMix: a CoreLib-heavy workload for spanprof's ReadyToRun tests. Most of its CPU is in
// precompiled CoreLib code: UTF-8 decoding and encoding, string searching and formatting,
// sorting, dictionaries, LINQ, all run on thread-pool workers (Thread.StartCallback and the
// worker loop are ReadyToRun too). Usage: CoreLibMix [seconds=10]
using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

internal static class Program
{
    private static long s_sink;

    private static int Main(string[] args)
    {
        double seconds = args.Length > 0 ? double.Parse(args[0], System.Globalization.CultureInfo.InvariantCulture) : 10;
        Console.WriteLine($"pid {Environment.ProcessId}");
        var end = DateTime.UtcNow.AddSeconds(seconds);
        var tasks = new Task[2];
        for (int t = 0; t < tasks.Length; t++)
        {
            int seed = t;
            tasks[t] = Task.Run(() => Work(seed, end));
        }
        Task.WaitAll(tasks);
        Console.WriteLine($"done {s_sink & 0xff}");
        return 0;
    }

    private static void Work(int seed, DateTime end)
    {
        var rng = new Random(seed);
        var words = new string[512];
        for (int i = 0; i < words.Length; i++)
            words[i] = "word" + rng.Next(100000).ToString("x") + "é✓";
        string text = string.Join(' ', words);
        byte[] utf8 = Encoding.UTF8.GetBytes(text);
        while (DateTime.UtcNow < end)
        {
            // Each round queues small pieces of work, so the worker loop itself is sampled too.
            var parts = new Task<long>[8];
            for (int i = 0; i < parts.Length; i++)
            {
                int k = i;
                parts[i] = Task.Run(() => Round(k, words, text, utf8));
            }
            foreach (var p in parts)
                Interlocked.Add(ref s_sink, p.Result);
        }
    }

    private static long Round(int k, string[] words, string text, byte[] utf8)
    {
        long sum = 0;
        for (int r = 0; r < 20; r++)
        {
            string decoded = Encoding.UTF8.GetString(utf8);
            sum += Encoding.UTF8.GetByteCount(decoded);
            sum += decoded.IndexOf("word" + (k + r).ToString(), StringComparison.Ordinal);
            sum += text.Split(' ').Length;
            sum += decoded.ToUpperInvariant().GetHashCode() & 1;
            var counts = new Dictionary<string, int>();
            foreach (var w in words)
                counts[w] = counts.TryGetValue(w, out int c) ? c + 1 : 1;
            sum += counts.Count;
            sum += words.Where(w => w.Length > 8).Select(w => w.Length).Sum();
            var sorted = words.ToArray();
            Array.Sort(sorted, StringComparer.Ordinal);
            sum += sorted[0].Length;
            var sb = new StringBuilder();
            for (int i = 0; i < 64; i++)
                sb.Append(i).Append(',').Append(words[i]);
            sum += sb.ToString().Length;
        }
        return sum;
    }
}
