// See service.h.
#define _GNU_SOURCE
#include "service.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

void service_spawn(void *(*run)(void *)) {
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_create(&t, &attr, run, NULL);
  pthread_attr_destroy(&attr);
}

JNIEnv *service_attach(JavaVM *vm, const char *os_name, const char *java_name) {
  JNIEnv *jni = NULL;
  pthread_setname_np(pthread_self(), os_name);
  JavaVMAttachArgs aa = {JNI_VERSION_1_6, (char *)java_name, NULL};
  if ((*vm)->AttachCurrentThreadAsDaemon(vm, (void **)&jni, &aa) != JNI_OK) return NULL;
  return jni;
}

FILE *service_open(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    return NULL;
  }
  setvbuf(f, NULL, _IOFBF, 1 << 16);
  return f;
}

void service_begin(agent_service *s, FILE *out) {
  s->out = out;
  pthread_cond_broadcast(&s->cond);
}

void service_end(agent_service *s) {
  pthread_mutex_lock(&s->lock);
  if (s->out) {
    s->stop_wanted = 1;
    pthread_cond_broadcast(&s->cond);
    while (s->stop_wanted) pthread_cond_wait(&s->cond, &s->lock);
  }
  pthread_mutex_unlock(&s->lock);
}

void service_ended(agent_service *s) {
  fclose(s->out);
  s->out = NULL;
  s->stop_wanted = 0;
  pthread_cond_broadcast(&s->cond);
}

void service_sleep(agent_service *s, int64_t ns) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += (time_t)(ns / 1000000000LL);
  until.tv_nsec += (long)(ns % 1000000000LL);
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(&s->cond, &s->lock, &until);
}
