// Loopback connect workload for the tcplat overhead rows: a server thread accepts on 127.0.0.1
// (an ephemeral port) and writes argv[2] bytes to each connection; the main thread makes argv[1]
// connects, reads each to its end and closes it. Exits 0 when all are done, non-zero on a failure.
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int listener;
static long bytes;

static void *serve(void *arg)
{
	static char buf[65536];

	(void)arg;
	for (;;) {
		int c = accept(listener, NULL, NULL);

		if (c < 0)
			return NULL;
		for (long left = bytes; left > 0;) {
			ssize_t n = write(c, buf, left < (long)sizeof buf ? (size_t)left : sizeof buf);

			if (n <= 0)
				break;
			left -= n;
		}
		close(c);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in srv = { .sin_family = AF_INET };
	socklen_t len = sizeof srv;
	pthread_t t;
	char buf[65536];
	int one = 1;

	if (argc < 3)
		return 2;
	bytes = atol(argv[2]);
	inet_pton(AF_INET, "127.0.0.1", &srv.sin_addr);
	listener = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(listener, (struct sockaddr *)&srv, sizeof srv) || listen(listener, 512) ||
	    getsockname(listener, (struct sockaddr *)&srv, &len))
		return 3;
	pthread_create(&t, NULL, serve, NULL);
	for (int i = 0, n = atoi(argv[1]); i < n; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		/* SO_LINGER 0: the client's side closes with a reset, leaving no TIME_WAIT socket per
		 * connect (thousands of them would exhaust the ephemeral ports over the rounds). */
		struct linger l = { 1, 0 };
		setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof l);
		if (connect(s, (struct sockaddr *)&srv, sizeof srv))
			return 5;
		while (read(s, buf, sizeof buf) > 0) {
		}
		close(s);
	}
	return 0;
}
