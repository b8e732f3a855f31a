// See service.h.
#define _GNU_SOURCE
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

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

// The uid a file shows when its owner has no id in our user namespace (a host /tmp, root's,
// seen from a JVM in its own user namespace).
static uid_t unmapped_uid(void) {
  char buf[16] = {0};
  int fd = open("/proc/sys/fs/overflowuid", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
  if (fd >= 0) close(fd);
  return n > 0 ? (uid_t)strtoul(buf, NULL, 10) : 65534;
}

// The folder the helper names (the JVM's /tmp): it must be either ours alone or a shared one
// with the sticky bit, where no one else can rename or remove what we make. It may be reached
// through a link (a container's /tmp often is one, which only its root could change): what
// counts is the folder opened, checked here.
static int open_out_dir(const char *path, const char **name) {
  char dir[PATH_MAX];
  const char *slash = strrchr(path, '/');
  if (!slash || !slash[1] || (size_t)(slash - path) >= sizeof(dir)) return -1;
  memcpy(dir, path, (size_t)(slash - path));
  dir[slash - path] = 0;
  *name = slash + 1;
  int dfd = open(slash == path ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (dfd < 0) return -1;
  bool ok = fstat(dfd, &st) == 0 && ((st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH))) || ((st.st_mode & S_ISVTX) && (st.st_uid == 0 || st.st_uid == unmapped_uid())));
  if (!ok) {
    close(dfd);
    return -1;
  }
  return dfd;
}

// The output file is made here, exclusively and without following a link, through the folder's
// fd, then checked: a regular file of ours, one link, empty. The JVM's user may have planted a
// link at the name to a file of someone the JVM might run as (it could have become root by
// exec'ing a setuid program since the helper looked).
FILE *service_open(const char *path) {
  const char *name;
  int dfd = open_out_dir(path, &name);
  if (dfd < 0) return NULL;
  int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  close(dfd);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1 || st.st_size != 0)) {
    close(fd);
    return NULL;
  }
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    return NULL;
  }
  setvbuf(f, NULL, _IOFBF, 1 << 16);
  return f;
}

static long long max_file_bytes(void) {
  const char *e = getenv("EBPF_STUDIO_JVMAGENT_MAX_FILE_BYTES");
  long long v = e ? atoll(e) : 0;
  return v > 0 && v < SERVICE_MAX_FILE_BYTES ? v : SERVICE_MAX_FILE_BYTES;
}

void service_begin(agent_service *s, FILE *out) {
  s->out = out;
  s->max_bytes = max_file_bytes();
  s->begun_ns = mono_now();
  s->next_probe_ns = 0;
  s->reader_seen = 0;
  s->orphaned = SERVICE_RUNNING;
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

int service_orphaned(agent_service *s) {
  if (!s->out || s->stop_wanted) return 0;
  int64_t now = mono_now();
  if (now < s->next_probe_ns) return 0;
  s->next_probe_ns = now + 100000000LL;
  long size = ftell(s->out); // what the file holds once the buffer is written
  if (size >= s->max_bytes) {
    s->orphaned = SERVICE_FILE_FULL;
    fprintf(s->out, "X\tfull\t%ld\n", size);
    return 1;
  }
  int fd = fileno(s->out);
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    flock(fd, LOCK_UN);
    if (!s->reader_seen && now - s->begun_ns < SERVICE_READER_GRACE_NS) return 0;
    s->orphaned = SERVICE_READER_GONE;
    fprintf(s->out, "X\treader-gone\n");
    return 1;
  }
  if (errno == EWOULDBLOCK) s->reader_seen = 1;
  return 0;
}

void service_discard(agent_service *s) {
  char link[64], path[PATH_MAX];
  struct stat mine, named;
  int fd = fileno(s->out);
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof(path) - 1);
  if (n <= 0 || fstat(fd, &mine) != 0) return;
  path[n] = 0;
  // only our file under that name: never a file put there since (lstat: never through a link)
  if (path[0] == '/' && lstat(path, &named) == 0 && named.st_dev == mine.st_dev && named.st_ino == mine.st_ino) unlink(path);
}
