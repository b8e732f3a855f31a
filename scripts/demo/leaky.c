/* Demo workload for "Find Memory Leaks" and "Profile CPU": leaks 4 KB a second from one line,
 * frees everything else, and burns CPU in two functions (3:1). Built with -g
 * -fno-omit-frame-pointer so stacks and source lines are complete. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned long sink;

static void burn(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
}

static void hot_path(void) { burn(3000000); }
static void cold_path(void) { burn(1000000); }

static char *make_record(size_t n)
{
	char *p = malloc(n); /* leaks when the caller forgets it */
	memset(p, 'x', n);
	return p;
}

int main(void)
{
	for (unsigned long tick = 0;; tick++) {
		char *tmp = make_record(256);
		free(tmp);
		if (tick % 10 == 0)
			make_record(4096); /* the leak */
		hot_path();
		cold_path();
		usleep(100000);
	}
}
