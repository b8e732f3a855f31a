// CPU-bound workload for the profile overhead row: prints "ready", then for every "S" line on
// stdin spins for S seconds of wall time and prints "ops_per_sec X" (iterations of a small
// hash loop per second); exits on EOF. The loop has a few nested calls so stacks are not flat.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long mix(unsigned long x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdUL;
	x ^= x >> 33;
	return x;
}

__attribute__((noinline)) static unsigned long step(unsigned long x)
{
	for (int i = 0; i < 64; i++) x = mix(x + i);
	return x;
}

int main(void)
{
	char line[64];
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		double secs = atof(line), t0 = now_s(), t;
		unsigned long x = 1, ops = 0;
		do {
			for (int i = 0; i < 1000; i++) x = step(x);
			ops += 1000;
			t = now_s();
		} while (t - t0 < secs);
		sink = x;
		printf("ops_per_sec %.1f\n", ops / (t - t0));
		fflush(stdout);
	}
	return 0;
}
