/* Starts a command stopped: the memleak tracer attaches its uprobes to this pid while it is
 * in SIGSTOP, then resumes it with SIGCONT, so the probes see the target's first instruction.
 * The pid survives execvp, which is why stopping before the exec is enough. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ebpf-studio-launch COMMAND [ARG...]\n");
		return 2;
	}
	raise(SIGSTOP);
	execvp(argv[1], argv + 1);
	fprintf(stderr, "ebpf-studio-launch: cannot run %s: %s\n", argv[1], strerror(errno));
	return 127;
}
