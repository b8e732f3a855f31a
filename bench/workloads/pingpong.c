// Context-switch-heavy workload for the off-CPU overhead row: two threads pass a token through
// a pair of pipes, each doing a little work per pass, so each pass blocks one thread and wakes
// the other (two context switches per round trip at least). Prints "ready", then for every "S"
// line on stdin runs S seconds of wall time and prints "ops_per_sec X cs_per_sec Y" (round trips,
// and the process's context switches, per second); a "work N" line sets the work per pass (and
// prints "work N"); a "pin A B" line puts the first thread on CPU A and the second on CPU B (and
// prints "pin A B"); exits on EOF. argv[1]: the work per pass at the start.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static volatile unsigned long sink;
static long work = 6000;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(void)
{
	unsigned long x = 1;
	for (long i = 0; i < work; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

static pid_t tids[2];

/* context switches of both threads so far (voluntary and not) */
static unsigned long switches(void)
{
	char path[64], line[256];
	unsigned long n = 0, v;
	for (int t = 0; t < 2; t++) {
		snprintf(path, sizeof path, "/proc/self/task/%d/status", tids[t]);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "voluntary_ctxt_switches: %lu", &v) == 1 || sscanf(line, "nonvoluntary_ctxt_switches: %lu", &v) == 1)
				n += v;
		fclose(f);
	}
	return n;
}

__attribute__((noinline)) static void bounce(void)
{
	char c;
	for (;;) {
		if (read(ab[0], &c, 1) != 1)
			exit(2);
		spin();
		if (write(ba[1], &c, 1) != 1)
			exit(2);
	}
}

static void *other(void *arg)
{
	(void)arg;
	tids[1] = gettid();
	bounce();
	return NULL;
}

int main(int argc, char **argv)
{
	char line[64], c = 'x';
	pthread_t t;
	if (argc > 1)
		work = atol(argv[1]);
	if (pipe(ab) || pipe(ba))
		return 1;
	tids[0] = gettid();
	pthread_create(&t, NULL, other, NULL);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		int cpu[2];
		if (sscanf(line, "pin %d %d", &cpu[0], &cpu[1]) == 2) {
			for (int i = 0; i < 2; i++) {
				cpu_set_t set;
				CPU_ZERO(&set);
				CPU_SET(cpu[i], &set);
				if (sched_setaffinity(tids[i], sizeof set, &set)) {
					perror("sched_setaffinity");
					return 1;
				}
			}
			printf("pin %d %d\n", cpu[0], cpu[1]);
			fflush(stdout);
			continue;
		}
		if (sscanf(line, "work %ld", &work) == 1) {
			printf("work %ld\n", work);
			fflush(stdout);
			continue;
		}
		double secs = atof(line), t0 = now_s(), t1;
		unsigned long ops = 0, s0 = switches();
		do {
			for (int i = 0; i < 100; i++) {
				if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
					return 2;
				spin();
			}
			ops += 100;
			t1 = now_s();
		} while (t1 - t0 < secs);
		printf("ops_per_sec %.1f cs_per_sec %.0f\n", ops / (t1 - t0), (switches() - s0) / (t1 - t0));
		fflush(stdout);
	}
	return 0;
}
