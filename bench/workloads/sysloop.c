// Event generator for the event-throughput row: prints "ready", then for every "S" line on
// stdin calls getppid() in a loop for S seconds (bpf/bench_events.bpf.c turns each call into
// ring-buffer events) and prints "calls N"; exits on EOF.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	char line[64];
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		double secs = atof(line), t0 = now_s();
		long calls = 0;
		do {
			for (int i = 0; i < 256; i++) syscall(SYS_getppid);
			calls += 256;
		} while (now_s() - t0 < secs);
		printf("calls %ld\n", calls);
		fflush(stdout);
	}
	return 0;
}
