// StartupHook.cs: entry point for DOTNET_STARTUP_HOOKS=/path/SpanProf.Hook.dll (no app changes).
using SpanProfHook;

/// <summary>Called by the runtime before Main when listed in DOTNET_STARTUP_HOOKS.</summary>
internal static class StartupHook
{
    public static void Initialize()
    {
        // EnsureStarted never throws: a failure disables the hook with one line on stderr.
        Hook.EnsureStarted("startup hook");
    }
}
