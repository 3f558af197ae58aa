// SpanProf.cs: the public API for apps that reference the hook: SpanProf.Start() and SpanProf.Label(...).
using System;
using SpanProfHook;

/// <summary>
/// spanprof span-context hook. Works without any call when loaded as a startup hook
/// (DOTNET_STARTUP_HOOKS); an app that references the package starts it with the first
/// <see cref="Label"/> or <see cref="Start"/>. Only one table is ever created per process.
/// </summary>
public static class SpanProf
{
    /// <summary>Starts publishing span context (idempotent); true when the hook is active.</summary>
    public static bool Start() => Hook.EnsureStarted("SpanProf.Start");

    /// <summary>True when span context is being published for this process.</summary>
    public static bool IsActive => Hook.IsActive;

    /// <summary>
    /// Adds a profiler label to the current async context until the returned scope is disposed:
    /// <c>using (SpanProf.Label("tenant", "acme")) { ... }</c>. Nested scopes stack (an inner value
    /// of the same key wins), and labels flow into awaits, tasks and thread-pool work started in
    /// the scope, like Go's pprof.Do. Values are cut to 255 UTF-8 bytes; a label that does not fit
    /// (more than 253 distinct keys, or a record over 640 bytes) is dropped and counted.
    /// </summary>
    public static LabelScope Label(string key, string value)
    {
        Hook.EnsureStarted("SpanProf.Label");
        return new LabelScope(Hook.Push(key, value));
    }

    /// <summary>Labels dropped so far (key table full, key longer than 255 bytes, record full).</summary>
    public static long DroppedLabels => System.Threading.Interlocked.Read(ref RecordEncoder.Dropped);

    /// <summary>Restores the labels that were current before <see cref="Label"/> when disposed.</summary>
    public readonly struct LabelScope : IDisposable
    {
        private readonly object? _token;
        private readonly bool _set;

        internal LabelScope(object? token)
        {
            _token = token;
            _set = !ReferenceEquals(token, Hook.NotApplied);
        }

        public void Dispose()
        {
            if (_set)
                Hook.Pop(_token);
        }
    }
}
