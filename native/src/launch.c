/* Starts a command for the helper, as the user it already dropped to (libuv sets uid/gid before
 * the exec of this program).
 *
 *   ebpf-studio-launch COMMAND [ARG...]
 *       stops itself, then execvp: the memleak tracer attaches its uprobes to this pid while it is
 *       in SIGSTOP, then resumes it with SIGCONT, so the probes see the target's first
 *       instruction. The pid survives execvp, which is why stopping before the exec is enough.
 *   ebpf-studio-launch [--cwd DIR] [--no-stop] [--exec FILE] [--preload] -- ARGV0 [ARG...]
 *       --cwd: changes directory here, after the privilege drop, so a folder the user cannot
 *       enter is refused to the user instead of being entered by root; --exec: runs FILE with
 *       ARGV0 as its argv[0]; --preload: moves EBPF_STUDIO_LAUNCH_PRELOAD into LD_PRELOAD just
 *       before the exec (the interposer must not load into this launcher itself). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *cwd = NULL, *file = NULL;
	int stop = 1, preload = 0, i = 1;

	if (argc < 2) {
		fprintf(stderr, "usage: ebpf-studio-launch [--cwd DIR] [--no-stop] [--exec FILE] [--preload] -- COMMAND [ARG...]\n");
		return 2;
	}
	if (strncmp(argv[1], "--", 2) == 0) {
		for (; i < argc; i++) {
			if (strcmp(argv[i], "--") == 0) {
				i++;
				break;
			} else if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc) {
				cwd = argv[++i];
			} else if (strcmp(argv[i], "--exec") == 0 && i + 1 < argc) {
				file = argv[++i];
			} else if (strcmp(argv[i], "--no-stop") == 0) {
				stop = 0;
			} else if (strcmp(argv[i], "--preload") == 0) {
				preload = 1;
			} else {
				fprintf(stderr, "ebpf-studio-launch: unknown option %s\n", argv[i]);
				return 2;
			}
		}
		if (i >= argc) {
			fprintf(stderr, "ebpf-studio-launch: no command after --\n");
			return 2;
		}
	}
	if (cwd && chdir(cwd) != 0) {
		fprintf(stderr, "ebpf-studio-launch: cannot enter the working directory %s as uid %d: %s\n", cwd, (int)getuid(), strerror(errno));
		return 126;
	}
	if (preload) {
		const char *lib = getenv("EBPF_STUDIO_LAUNCH_PRELOAD");
		if (lib && setenv("LD_PRELOAD", lib, 1) != 0) return 127;
		unsetenv("EBPF_STUDIO_LAUNCH_PRELOAD");
	}
	if (stop)
		raise(SIGSTOP);
	if (file)
		execv(file, argv + i);
	else
		execvp(argv[i], argv + i);
	fprintf(stderr, "ebpf-studio-launch: cannot run %s: %s\n", file ? file : argv[i], strerror(errno));
	return 127;
}
