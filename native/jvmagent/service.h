// The service thread each part of the agent keeps (CPU profile and heap sampler in agent.c, lock
// contention in locks.c): a detached thread attached to the JVM as a daemon, asleep on `cond`
// while no session's file is open, which drains the part's queue into `out` while one is, and
// which writes the end record and closes the file when start/stop asks it to. Every part has its
// own service (own lock, condition variable and file), so no part waits on another's thread.
#pragma once
#include <jni.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

typedef struct agent_service {
  pthread_mutex_t lock; // service thread vs start/stop
  pthread_cond_t cond;  // wakes the thread (a session started, a stop asked) and its waiters (stop done)
  FILE *out;            // open while a session runs (under lock)
  int stop_wanted;      // under lock: set by start/stop, cleared by the thread once the file is closed
  // The reader's watch (service_orphaned), under lock: when the session began, the next probe,
  // whether the reader's lock was seen, and why the session ended by itself (SERVICE_*).
  int64_t begun_ns, next_probe_ns;
  int reader_seen;
  int orphaned;
  long long max_bytes; // this session's file limit
} agent_service;

#define AGENT_SERVICE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0, 0, 0}

// Why a session ended without a stop command (agent_service.orphaned).
enum { SERVICE_RUNNING = 0, SERVICE_READER_GONE = 1, SERVICE_FILE_FULL = 2 };
// A session's file grows to this at most; then the part stops as if told to (its end record
// follows), so a reader that stopped reading cannot fill the JVM's /tmp. The JVM's environment
// may lower it (EBPF_STUDIO_JVMAGENT_MAX_FILE_BYTES), never raise it.
#define SERVICE_MAX_FILE_BYTES (256LL << 20)
// The reader takes its lock within this long of the start, or the session ends.
#define SERVICE_READER_GRACE_NS (15LL * 1000000000LL)

// Starts run(NULL) on a detached thread (it lives as long as the JVM).
void service_spawn(void *(*run)(void *));
// Called first on the service thread: names it (os_name, at most 15 characters, what ps and perf
// show; java_name is what thread dumps show) and attaches it to the JVM as a daemon, so it never
// keeps the JVM from exiting. NULL when the JVM refuses the thread.
JNIEnv *service_attach(JavaVM *vm, const char *os_name, const char *java_name);
// Opens a session's output file (created or truncated, mode 0600, not inherited by children,
// 64 KiB buffer); NULL when it cannot be opened.
FILE *service_open(const char *path);
// The session's start is done (its header written, its events on): the service thread wakes and
// serves `out`. Under s->lock.
void service_begin(agent_service *s, FILE *out);
// Asks the service thread to end the running session (write its end record, close its file) and
// waits until it has; returns at once when no session runs. Called without s->lock, after the
// part has stopped producing records (events off, callbacks drained).
void service_end(agent_service *s);
// On the service thread, under s->lock, once the end record is written: closes the file and
// wakes service_end's caller.
void service_ended(agent_service *s);
// On the service thread, under s->lock: sleeps until woken or `ns` nanoseconds have passed.
void service_sleep(agent_service *s, int64_t ns);
// On the service thread, under s->lock, while a session runs: whether it must end by itself,
// because its reader is gone or its file is full (then s->orphaned says which, and a record
// "X <why>" is in the file). The reader (the helper) holds a shared flock(2) on its own fd of
// the file for as long as it reads; the kernel drops it when that fd closes, however the
// reader died, so an exclusive lock this side can take means nobody reads any more. A flock
// needs no pid, clock or path, and works across pid and mount namespaces (a container). Until
// the reader's lock was first seen the session is given SERVICE_READER_GRACE_NS. Probes at most
// every 100 ms. The part then stops producing (as its stop does) and sets stop_wanted.
int service_orphaned(agent_service *s);
// On the service thread, under s->lock, after the end record of a session whose reader is gone:
// removes the file if its name still names it (nobody else would).
void service_discard(agent_service *s);
