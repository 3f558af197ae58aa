/* command.c: `record -- COMMAND`: the command started with the span hook and perf maps on. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command.h"
#include "log.h"
#include "pmpolicy.h"
#include "rtversion.h"

/* The hook next to the binary (build/, or an install's lib/spanprof/), or $SPANPROF_HOOK. */
static int find_hook(char *buf, size_t len)
{
	const char *env = getenv("SPANPROF_HOOK");
	const char *rel[] = { "hook/SpanProf.Hook.dll", "../lib/spanprof/hook/SpanProf.Hook.dll",
			      "/opt/spanprof/hook/SpanProf.Hook.dll" };
	char exe[4096], *slash;
	ssize_t n;

	if (env && env[0]) {
		snprintf(buf, len, "%s", env);
		return access(buf, R_OK);
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		int n = rel[i][0] == '/' ? snprintf(buf, len, "%s", rel[i])
					 : snprintf(buf, len, "%s/%s", exe, rel[i]);

		if (n > 0 && (size_t)n < len && !access(buf, R_OK))
			return 0;
	}
	return -1;
}

pid_t command__spawn(char *const *argv, const char *user, int *go)
{
	char hook[4096], hooks[8192];
	const char *old = getenv("DOTNET_STARTUP_HOOKS");
	struct passwd *pw = NULL;
	char why[512];
	int pfd[2], may_perfmap;
	pid_t pid;

	if (find_hook(hook, sizeof(hook))) {
		log_error("cannot find SpanProf.Hook.dll next to spanprof (run make, or "
			"set SPANPROF_HOOK=/path/to/SpanProf.Hook.dll)");
		return -2;
	}
	if (user && !(pw = getpwnam(user))) {
		log_error("no user %s: give an existing user with --user", user);
		return -2;
	}
	/* Perf maps from the start only where the runtime it will load has no known perf map
	 * deadlock (perfmap/rtversion.h); else they are left to the IPC, which checks the runtime
	 * the process did load. */
	may_perfmap = rtversion__command_may_enable(argv[0], why, sizeof(why));
	if (!may_perfmap)
		log_warn("%s: DOTNET_PerfMapEnabled not set: %s", argv[0], why);
	if (pipe2(pfd, O_CLOEXEC)) {
		log_error("pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		log_error("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		char c;

		close(pfd[1]);
		if (read(pfd[0], &c, 1) != 1)
			_exit(127);	/* the recording did not start */
		snprintf(hooks, sizeof(hooks), "%s%s%s", old && old[0] ? old : "",
			 old && old[0] ? ":" : "", hook);
		setenv("DOTNET_STARTUP_HOOKS", hooks, 1);
		if (may_perfmap)
			setenv("DOTNET_PerfMapEnabled", PMPOLICY_PERFMAP_TYPE_STR, 0);
		if (pw && (initgroups(pw->pw_name, pw->pw_gid) || setgid(pw->pw_gid) ||
			   setuid(pw->pw_uid))) {
			log_error("cannot become %s: %s", user, strerror(errno));
			_exit(126);
		}
		execvp(argv[0], argv);
		log_error("cannot run %s: %s", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(pfd[0]);
	*go = pfd[1];
	return pid;
}

int command__reap(pid_t pid, int block)
{
	int st;
	pid_t r;

	do
		r = waitpid(pid, &st, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}
