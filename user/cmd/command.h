/* command.h: `record -- COMMAND`: run a command with the span hook injected and perf maps on. */
#ifndef SPANPROF_COMMAND_H
#define SPANPROF_COMMAND_H

#include <sys/types.h>

/*
 * Fork argv, held before exec until a byte is written to *go (the caller starts sampling first),
 * with SpanProf.Hook.dll appended to DOTNET_STARTUP_HOOKS, DOTNET_PerfMapEnabled=1 unless set, and
 * privileges dropped to user (NULL: stay). The hook is found next to the binary (hook/, or an
 * install's ../lib/spanprof/hook/), in /opt/spanprof/hook, or at $SPANPROF_HOOK. Returns the pid,
 * or minus an exit code after a one-line message. Closing *go unwritten makes the child exit 127.
 */
pid_t command__spawn(char *const *argv, const char *user, int *go);
/* The command's exit code once it has ended (128 + signal for a signal), -1 while it runs. */
int command__reap(pid_t pid, int block);

#endif /* SPANPROF_COMMAND_H */
