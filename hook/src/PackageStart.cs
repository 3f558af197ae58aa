// PackageStart.cs: the hook's start for apps that run no startup hook (Native AOT, trimmed apps).
using SpanProfHook;

namespace SpanProf
{
    /// <summary>
    /// Starts the hook from the application itself, where the runtime runs no startup hook: Native
    /// AOT apps, and trimmed apps (<c>StartupHookSupport=false</c>). The package's build targets call
    /// it from a module initializer that they add to the app's own compilation in those builds, so
    /// the app needs no change. Calling it again, or in a process that the startup hook already
    /// started, does nothing.
    /// </summary>
    public static class PackageStart
    {
        /// <summary>Starts publishing span context once per process; never throws (a failure
        /// disables the hook with one line on stderr).</summary>
        public static void Initialize() => Hook.EnsureStarted("package module initializer");
    }
}
