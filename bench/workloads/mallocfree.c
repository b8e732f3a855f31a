// malloc/free microbenchmark for the memleak overhead rows and the helper-memory row.
//
//   mallocfree bench   prints "ready", then for every "N" line on stdin runs N malloc+free pairs
//                      and prints "ns_per_op X" (X = nanoseconds per pair); exits on EOF.
//   mallocfree churn R keeps ~1000 allocations live and replaces R of them a second (R mallocs
//                      and R frees), from four call sites, until stdin closes.
// Built -O2 -g -fno-omit-frame-pointer so the tracer's stacks are walkable.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/select.h>

static void *volatile sink;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// noinline: separate call sites give the tracer separate stacks, as a real program would.
__attribute__((noinline)) static void *site_a(size_t n) { return malloc(n); }
__attribute__((noinline)) static void *site_b(size_t n) { return malloc(n + 32); }
__attribute__((noinline)) static void *site_c(size_t n) { return calloc(1, n); }
__attribute__((noinline)) static void *site_d(size_t n) { return malloc(n * 2); }

static void bench(void)
{
	char line[64];
	while (fgets(line, sizeof line, stdin)) {
		long n = atol(line);
		double t0 = now_ns();
		for (long i = 0; i < n; i++) {
			char *p = malloc(16 + (i & 255));
			p[0] = (char)i; // the write keeps the compiler from eliding the pair
			sink = p;
			free(p);
		}
		printf("ns_per_op %.3f\n", (now_ns() - t0) / (n > 0 ? n : 1));
		fflush(stdout);
	}
}

static void churn(long rate)
{
	enum { LIVE = 1000 };
	static void *live[LIVE];
	void *(*sites[4])(size_t) = { site_a, site_b, site_c, site_d };
	long k = 0;
	// Work in 10 ms slices: rate/100 replacements each, then sleep the rest of the slice.
	long per_slice = rate / 100 > 0 ? rate / 100 : 1;
	double next = now_ns();
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		for (long i = 0; i < per_slice; i++, k++) {
			long slot = k % LIVE;
			free(live[slot]);
			live[slot] = sites[k & 3](32 + (k % 200));
			memset(live[slot], 1, 8);
		}
		next += 10e6;
		double wait = next - now_ns();
		if (wait > 0) {
			struct timespec ts = { 0, (long)wait };
			nanosleep(&ts, NULL);
		}
		// stdin closing (the bench ending) ends the program; poll it without blocking.
		if (k % (per_slice * 10) == 0) {
			fd_set fds;
			struct timeval tv = { 0, 0 };
			FD_ZERO(&fds);
			FD_SET(0, &fds);
			if (select(1, &fds, NULL, NULL, &tv) > 0) {
				char buf[64];
				if (fgets(buf, sizeof buf, stdin) == NULL) break;
			}
		}
	}
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "churn") == 0) {
		churn(atol(argv[2]));
		return 0;
	}
	printf("ready\n");
	fflush(stdout);
	bench();
	return 0;
}
