// SpanProf.cs: the public API, one type: SpanProf.Label, a profiler-label scope (like Go's pprof.Do).
using System;
using SpanProfHook;

namespace SpanProf
{
    /// <summary>
    /// A profiler label for the code that runs inside this scope, like Go's <c>pprof.Do</c>:
    /// every CPU sample that spanprof takes of it carries <c>key=value</c> next to its span labels
    /// (<c>trace_id</c>, <c>span_id</c>, <c>span_name</c>).
    /// <code>
    /// using (new SpanProf.Label("tenant", tenantId))
    /// {
    ///     await HandleAsync();   // the label follows awaits, Task.Run and thread-pool work
    /// }
    /// </code>
    /// </summary>
    /// <remarks>
    /// <para>Scopes nest: an inner label of the same key wins until it is disposed, and disposing a
    /// scope restores the labels that were current when it was created, keeping a span that was
    /// started inside it and is still running. Labels flow with the async context
    /// (<see cref="System.Threading.ExecutionContext"/>), so they are right after an <c>await</c>
    /// resumes on another thread. Dispose each scope once, in the context that created it.</para>
    /// <para>The first label starts the hook if nothing started it yet (the package's startup hook
    /// or <c>DOTNET_STARTUP_HOOKS</c> usually have). Values are cut to 255 UTF-8 bytes; keys are
    /// at most 255 UTF-8 bytes, and at most 253 distinct keys exist per process. A label that does
    /// not fit (more keys, or a record over 640 bytes) is dropped, never thrown. Where the hook
    /// is off (not Linux, <c>SPANPROF_HOOK_DISABLE=1</c>, a .NET runtime older than 8, a failure
    /// it reported on stderr) a label is a scope that does nothing.</para>
    /// <para><c>default(Label)</c> is a scope that does nothing. Creating and disposing a label
    /// costs about 0.2 µs and never throws.</para>
    /// </remarks>
    public readonly struct Label : IDisposable
    {
        private readonly object? _token;
        private readonly bool _set;

        /// <summary>Adds <paramref name="key"/>=<paramref name="value"/> to the labels of the
        /// current async context until <see cref="Dispose"/>.</summary>
        /// <param name="key">Label name, e.g. <c>tenant</c> (a null or empty key adds nothing).</param>
        /// <param name="value">Label value (null is the empty string).</param>
        public Label(string key, string value)
        {
            Hook.EnsureStarted("SpanProf.Label");
            _token = Hook.Push(key, value);
            _set = !ReferenceEquals(_token, Hook.NotApplied);
        }

        /// <summary>Restores the labels that were current before this scope.</summary>
        public void Dispose()
        {
            if (_set)
                Hook.Pop(_token);
        }
    }
}
