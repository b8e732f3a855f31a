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
} agent_service;

#define AGENT_SERVICE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0}

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
