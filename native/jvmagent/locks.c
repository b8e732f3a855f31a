// Lock contention in a running JVM, for `ebpf-studio profile --pid P --event lock`: how long Java
// threads waited to enter a contended `synchronized` monitor, and how long they stayed parked in
// java.util.concurrent (LockSupport.park: ReentrantLock, ReentrantReadWriteLock, semaphores,
// conditions), by the waiter's Java stack, the lock's class and, where the JVM can tell, the thread
// that held it and where.
//
// `locks,out=<path>,depth=<n>,period=<us>[,vthreads[,nolocks]][,noowner]` starts a session, `locksstop` ends it, `locksprobe`
// only answers whether this JVM can do it. Its own JVMTI environment (own capabilities, callbacks
// and tags, so neither the CPU profiler's nor the heap sampler's SetEventCallbacks replaces ours),
// own service thread and output file, like the heap sampler in agent.c.
//
// Monitors, exact: JVMTI's MonitorContendedEnter is posted on the waiting thread when it finds the
// monitor owned and is about to block; MonitorContendedEntered when it got it. The time between
// the two is the wait. At Enter (only then, so uncontended locking costs nothing) the callback
// takes the waiter's own Java stack (GetStackTrace of the current thread: cheap, no safepoint), the
// object's class, and the owner from GetObjectMonitorUsage with the owner's top frames
// (GetStackTrace of another thread: a handshake with that one thread). GetObjectMonitorUsage is a
// VM operation (a safepoint in JDK 17): one per contended enter, which is the price of naming the
// holder; it is paid only while a session runs, and not at all with `noowner` (the off-CPU
// profile's choice: a safepoint per contended enter would show in the very waits it measures).
// A virtual waiter (JDK 24+ unmounts it while it waits) may get the monitor on another carrier,
// so its Enter record is kept in JVMTI thread-local storage (per virtual thread), not in the
// carrier's.
//
// Parks, sampled: JVMTI has no park event and breakpoints on LockSupport cannot be set in a JVM
// that was started without the agent (can_generate_breakpoint_events is an OnLoad-only capability
// in HotSpot). The service thread looks at every platform thread each `period` µs: a thread in
// state PARKED is waiting in LockSupport.park; its blocker is Thread.parkBlocker (what
// LockSupport.getBlocker returns), and when the blocker is an AbstractOwnableSynchronizer
// (ReentrantLock's and ReentrantReadWriteLock's Sync) its exclusiveOwnerThread is the holder. A
// park episode (same thread, same blocker, parked at consecutive looks) is weighed by the time
// between the looks that saw it, so a park of D µs adds D on average whatever its phase against
// the period, and its stack and holder are read once, when the episode is first seen. GetThreadState
// and a field read per thread per look, a stack per episode: the cost scales with threads, not
// with lock traffic.
//
// Virtual threads (JDK 21+, option `vthreads`; with `nolocks` instead of monitors and parks, and
// then a JVM without them refuses the session, else it goes on without): a virtual thread
// that waits (parks, sleeps, blocks on a monitor or on I/O through the JDK's poller) is unmounted
// from its carrier, so no OS thread is blocked for it and no scheduler event sees its wait; the
// carrier goes on to run other virtual threads or idles in ForkJoinPool.awaitWork. HotSpot posts
// two extension events, com.sun.hotspot.events.VirtualThreadUnmount and VirtualThreadMount (found
// through GetExtensionEvents; they need the can_support_virtual_threads capability). At unmount,
// on the virtual thread itself, the callback takes its Java stack (where it waits) and its
// parkBlocker's class, kept in JVMTI thread-local storage, which is per virtual thread; at the
// next mount the interval is written, weighed by the time it was unmounted. That time includes
// the wait for a free carrier after the virtual thread was made runnable again. The holder is
// read at unmount too, as for a platform thread's park: a j.u.c lock's exclusiveOwnerThread (a
// platform or a virtual thread: GetStackTrace reads an unmounted one's frames from its
// continuation); a read lock's readers are not recorded by the JDK: "readers (not named)". A
// virtual thread that unmounts entering a contended monitor (JDK 24+) had its
// MonitorContendedEnter just before, on the same carrier: the monitor events are on in these
// sessions too, and that callback hands the monitor's class and owner (GetObjectMonitorUsage,
// not with `noowner`) to the unmount (record kind 'V'); the other way to learn the monitor,
// can_get_current_contended_monitor, Temurin 25 refuses on attach. Carriers are never counted.
// Cost while a session runs: a stack per unmount, a VM operation per contended monitor enter of
// a virtual thread. The capability is added by the first such session (HotSpot then reports
// every mount and unmount to JVMTI, a small cost per transition) and relinquished at its end.
//
// Idle costs nothing: on stop the monitor events are disabled, the poller stops, every reference
// is released and the service thread sleeps on a condition variable.
//
// File records, one a line, tab separated:
//   L <pid> <clock ns> <period ns>                        session start
//   M <index> <class> <method> <source file or -> <native>  a method's names (as the CPU profiler's)
//   W <kind m|p|v|V> <tid or 0> <end ns> <waited ns> <thread> <lock class or -> <holder or -> <holder frames or -> <frames...>
//       frames "<method index>:<bci>:<line>", leaf first; holder frames the same, comma separated
//   T <ns>                                                heartbeat
//   E <monitor waits> <park episodes> <looks> <callback ns> <look ns> <virtual-thread waits>   end, file closed
// Return codes: 103 cannot open the file, 104 bad options, 105 out of memory, 120 JVMTI
// unavailable, 121 the JVM refused the monitor-event capability, 122 no virtual-thread support
// (JDK < 21, or the mount/unmount events are missing).
#define _GNU_SOURCE
#include <jni.h>
#include <jvmti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "locks.h"
#include "methods.h"
#include "service.h"

#define LOCK_MAX_DEPTH 256
#define HOLDER_DEPTH 16 // an unmounted virtual holder has ~9 frames of Continuation/VirtualThread/Thread.sleep above its own
#define MAX_PARKED 4096 // park episodes followed at once (threads parked at the same time)

typedef struct lock_rec {
  struct lock_rec *next;
  char kind; // 'm' monitor, 'p' park, 'v' a virtual thread unmounted, 'V' one unmounted entering a monitor (JDK 24+)
  unsigned gen; // session that took it
  int tid;
  int64_t t0, end;
  char thread[96];
  char cls[200];
  char holder[96];
  jint holder_n;
  jvmtiFrameInfo holder_frames[HOLDER_DEPTH];
  jint n;
  jvmtiFrameInfo frames[]; // leaf first
} lock_rec;

typedef struct {
  jobject thread; // global refs
  jobject blocker;
  unsigned seen; // look number
  lock_rec *rec;
} parked_t;

static JavaVM *l_vm;
static jvmtiEnv *l_jvmti;
static int l_initialized;
static _Atomic int l_on;
static _Atomic int l_in_cb;
static _Atomic unsigned l_gen;
static _Atomic uint64_t l_monitor_waits, l_parks, l_looks, l_cb_ns, l_look_ns, l_vt_waits;
static int l_depth = 64;
static int l_monitor_owner = 1; // asks the JVM who owns a contended monitor
static int64_t l_period_ns = 2000000;
static pthread_mutex_t l_qlock = PTHREAD_MUTEX_INITIALIZER; // the queue only
static lock_rec *l_qhead, **l_qtail = &l_qhead;
static agent_service l_svc = AGENT_SERVICE_INIT;
// service thread only:
static method_table l_methods;
static parked_t l_parked[MAX_PARKED];
static int l_nparked;
static jfieldID l_park_blocker, l_owner_field;
static jclass l_aos; // global ref: java.util.concurrent.locks.AbstractOwnableSynchronizer
// ReentrantReadWriteLock's Sync, whose state counts its readers: an AbstractQueuedSynchronizer's
// int state with the readers in its upper 16 bits up to JDK 24, an AbstractQueuedLongSynchronizer's
// long state with them in its upper 32 bits from JDK 25. Thread.tid, and java.lang.BaseVirtualThread
// (JDK 21+; NULL before). Resolved once.
static jclass l_rwsync, l_aqls, l_vthread_class;
static jfieldID l_aqs_state, l_aqls_state, l_thread_tid;
// the waiting thread's monitor wait between Enter and Entered (callbacks run on that thread)
static __thread lock_rec *tl_wait;

static int64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void tidy(char *s) {
  for (; s && *s; s++)
    if (*s == '\t' || *s == '\n' || *s == ',') *s = ' ';
}

static void thread_name(jvmtiEnv *jv, JNIEnv *jni, jthread t, char *out, size_t size) {
  jvmtiThreadInfo info;
  memset(&info, 0, sizeof(info));
  snprintf(out, size, "?");
  if ((*jv)->GetThreadInfo(jv, t, &info) != JVMTI_ERROR_NONE) return;
  if (info.name) {
    snprintf(out, size, "%s", info.name);
    (*jv)->Deallocate(jv, (unsigned char *)info.name);
  }
  if (info.thread_group) (*jni)->DeleteLocalRef(jni, info.thread_group);
  if (info.context_class_loader) (*jni)->DeleteLocalRef(jni, info.context_class_loader);
  tidy(out);
}

// A holder's name: its own, or, for a thread without one (virtual threads have none unless the
// program gives one), "virtual#<id>" (else "thread#<id>") with the id Thread.threadId() returns,
// so two unnamed holders stay apart.
static void holder_name(jvmtiEnv *jv, JNIEnv *jni, jthread t, char *out, size_t size) {
  thread_name(jv, jni, t, out, size);
  if (out[0] && strcmp(out, "?")) return;
  long long id = l_thread_tid ? (long long)(*jni)->GetLongField(jni, t, l_thread_tid) : 0;
  if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
  int virt = l_vthread_class && (*jni)->IsInstanceOf(jni, t, l_vthread_class);
  snprintf(out, size, "%s#%lld", virt ? "virtual" : "thread", id);
}

static void class_of(jvmtiEnv *jv, JNIEnv *jni, jobject obj, char *out, size_t size) {
  snprintf(out, size, "-");
  if (!obj) return;
  jclass c = (*jni)->GetObjectClass(jni, obj);
  char *sig = NULL;
  if (c && (*jv)->GetClassSignature(jv, c, &sig, NULL) == JVMTI_ERROR_NONE && sig) {
    snprintf(out, size, "%s", sig);
    (*jv)->Deallocate(jv, (unsigned char *)sig);
  }
  if (c) (*jni)->DeleteLocalRef(jni, c);
  tidy(out);
}

static void holder_of(jvmtiEnv *jv, JNIEnv *jni, jthread owner, lock_rec *r) {
  if (!owner) return;
  holder_name(jv, jni, owner, r->holder, sizeof(r->holder));
  if ((*jv)->GetStackTrace(jv, owner, 0, HOLDER_DEPTH, r->holder_frames, &r->holder_n) != JVMTI_ERROR_NONE) r->holder_n = 0;
}

// The holder of a java.util.concurrent lock a thread parks on: an AbstractOwnableSynchronizer's
// exclusiveOwnerThread (ReentrantLock, a write lock; a platform or a virtual thread) with its top
// frames. A ReentrantReadWriteLock held by readers has no owner the JDK records (only their
// count, in the upper half of its state): it is said to be held by readers, not guessed at.
static void park_holder(jvmtiEnv *jv, JNIEnv *jni, jobject blocker, lock_rec *r) {
  if (!blocker || !l_aos || !l_owner_field || !(*jni)->IsInstanceOf(jni, blocker, l_aos)) return;
  jobject owner = (*jni)->GetObjectField(jni, blocker, l_owner_field);
  if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
  if (owner) {
    holder_of(jv, jni, owner, r);
    (*jni)->DeleteLocalRef(jni, owner);
    return;
  }
  if (l_rwsync && (*jni)->IsInstanceOf(jni, blocker, l_rwsync)) {
    int readers = 0;
    if (l_aqls && l_aqls_state && (*jni)->IsInstanceOf(jni, blocker, l_aqls)) readers = ((uint64_t)(*jni)->GetLongField(jni, blocker, l_aqls_state) >> 32) != 0;
    else if (l_aqs_state) readers = ((uint32_t)(*jni)->GetIntField(jni, blocker, l_aqs_state) >> 16) != 0;
    if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
    if (readers) snprintf(r->holder, sizeof(r->holder), "readers (not named)");
  }
}

// The owner of a monitor, where the JVM tells (GetObjectMonitorUsage: a VM operation): a platform
// thread, or a virtual thread mounted on its carrier; JDK 25 gives no owner for a virtual thread
// that holds the monitor while unmounted (sleeping or parked inside `synchronized`).
static void monitor_holder(jvmtiEnv *jv, JNIEnv *jni, jobject object, lock_rec *r) {
  jvmtiMonitorUsage u;
  memset(&u, 0, sizeof(u));
  if ((*jv)->GetObjectMonitorUsage(jv, object, &u) != JVMTI_ERROR_NONE) return;
  holder_of(jv, jni, u.owner, r);
  if (u.owner) (*jni)->DeleteLocalRef(jni, u.owner);
  for (jint i = 0; i < u.waiter_count; i++) (*jni)->DeleteLocalRef(jni, u.waiters[i]);
  for (jint i = 0; i < u.notify_waiter_count; i++) (*jni)->DeleteLocalRef(jni, u.notify_waiters[i]);
  if (u.waiters) (*jv)->Deallocate(jv, (unsigned char *)u.waiters);
  if (u.notify_waiters) (*jv)->Deallocate(jv, (unsigned char *)u.notify_waiters);
}

static lock_rec *new_rec(char kind) {
  lock_rec *r = malloc(sizeof(lock_rec) + (size_t)l_depth * sizeof(jvmtiFrameInfo));
  if (!r) return NULL;
  r->next = NULL;
  r->kind = kind;
  r->gen = atomic_load(&l_gen);
  r->tid = 0;
  r->t0 = r->end = 0;
  r->n = r->holder_n = 0;
  snprintf(r->thread, sizeof(r->thread), "?");
  snprintf(r->cls, sizeof(r->cls), "-");
  snprintf(r->holder, sizeof(r->holder), "-");
  return r;
}

static void push_rec(lock_rec *r) {
  pthread_mutex_lock(&l_qlock);
  *l_qtail = r;
  l_qtail = &r->next;
  pthread_mutex_unlock(&l_qlock);
}

// A compiled frame blocked in monitorenter reports the bytecode after it (the slow path's debug
// info resumes there), so its line is the synchronized block's first statement, not the
// `synchronized` line itself. Moved back onto the monitorenter when the bytecode before the
// reported one is one (1 byte long); interpreted frames already report the monitorenter.
#define BC_MONITORENTER 0xc2
static void at_monitorenter(jvmtiEnv *jv, jvmtiFrameInfo *f) {
  jint len = 0;
  unsigned char *code = NULL;
  if (f->location <= 0 || (*jv)->GetBytecodes(jv, f->method, &len, &code) != JVMTI_ERROR_NONE || !code) return;
  jlocation b = f->location;
  if (b <= len && (b == len || code[b] != BC_MONITORENTER) && code[b - 1] == BC_MONITORENTER) f->location = b - 1;
  (*jv)->Deallocate(jv, code);
}

static int l_vthreads;  // this session follows virtual threads
static _Atomic int l_vthreads_on; // their events are on (one quiesce switches them off)
static int l_locks = 1; // this session follows monitors and parks
// A virtual thread's contended enter, from MonitorContendedEnter to the unmount that follows on
// the same carrier (JDK 24+ unmounts a virtual thread blocked on a monitor): its monitor's class
// and holder, which the unmount record takes. Nothing else runs on the carrier in between.
static __thread lock_rec *tl_vt_monitor;

static int is_virtual(JNIEnv *jni, jthread t) { return l_vthread_class && t && (*jni)->IsInstanceOf(jni, t, l_vthread_class); }

static void JNICALL on_contended_enter(jvmtiEnv *jv, JNIEnv *jni, jthread thread, jobject object) {
  if (!atomic_load_explicit(&l_on, memory_order_acquire)) return;
  int virt = is_virtual(jni, thread);
  if (!l_locks && !(virt && l_vthreads)) return;
  atomic_fetch_add(&l_in_cb, 1);
  int64_t t0 = mono_ns();
  lock_rec *r = new_rec(virt && l_vthreads ? 'V' : 'm');
  if (r) {
    r->t0 = t0;
    r->tid = (int)syscall(SYS_gettid);
    class_of(jv, jni, object, r->cls, sizeof(r->cls));
    if (l_monitor_owner) monitor_holder(jv, jni, object, r);
    if ((*jv)->GetStackTrace(jv, NULL, 0, l_depth, r->frames, &r->n) != JVMTI_ERROR_NONE) r->n = 0;
    if (r->n > 0) at_monitorenter(jv, &r->frames[0]);
    thread_name(jv, jni, thread, r->thread, sizeof(r->thread));
    if (r->kind == 'V') {
      // the unmount record's lock: the wait is timed from unmount to mount, as every other
      free(tl_vt_monitor);
      tl_vt_monitor = r;
    } else {
      if (virt) {
        // a virtual waiter may unmount and be entered on another carrier: its own storage
        void *old = NULL;
        if ((*jv)->GetThreadLocalStorage(jv, thread, &old) == JVMTI_ERROR_NONE) free(old);
        if ((*jv)->SetThreadLocalStorage(jv, thread, r) != JVMTI_ERROR_NONE) free(r);
      } else {
        free(tl_wait); // an Enter whose Entered never came (a session stopped in between)
        tl_wait = r;
      }
    }
  }
  atomic_fetch_add_explicit(&l_cb_ns, (uint64_t)(mono_ns() - t0), memory_order_relaxed);
  atomic_fetch_sub(&l_in_cb, 1);
}

static void JNICALL on_contended_entered(jvmtiEnv *jv, JNIEnv *jni, jthread thread, jobject object) {
  (void)object;
  lock_rec *r = NULL;
  if (tl_vt_monitor) {
    // a virtual thread entered without unmounting (pinned before JDK 24, or the monitor came
    // free while it spun): its carrier waited, a monitor wait as a platform thread's
    r = tl_vt_monitor;
    tl_vt_monitor = NULL;
    if (!l_locks) {
      free(r);
      return;
    }
    r->kind = 'm';
  } else if (is_virtual(jni, thread)) {
    // with vthreads its storage holds the unmount record, for the mount callback: not ours
    if (l_vthreads || (*jv)->GetThreadLocalStorage(jv, thread, (void **)&r) != JVMTI_ERROR_NONE || !r) return;
    (*jv)->SetThreadLocalStorage(jv, thread, NULL);
    if (r->kind != 'm') { // an unmount record of an earlier session, not this wait
      free(r);
      return;
    }
  } else {
    r = tl_wait;
    tl_wait = NULL;
  }
  if (!r) return;
  if (!atomic_load_explicit(&l_on, memory_order_acquire) || r->gen != atomic_load(&l_gen)) {
    free(r);
    return;
  }
  r->end = mono_ns();
  atomic_fetch_add_explicit(&l_monitor_waits, 1, memory_order_relaxed);
  push_rec(r);
}

// ---- virtual threads ----

static jint l_mount_index = -1, l_unmount_index = -1;

// The bit JDK 21 named can_support_virtual_threads follows can_generate_sampled_object_alloc_events;
// older headers (the JDK we may be built against) call it padding. Set by position.
static void set_vthread_capability(jvmtiCapabilities *c) {
  jvmtiCapabilities probe;
  memset(&probe, 0, sizeof(probe));
  probe.can_generate_sampled_object_alloc_events = 1;
  const unsigned char *p = (const unsigned char *)&probe;
  for (size_t i = 0; i < sizeof(probe); i++)
    for (int b = 0; b < 8; b++)
      if (p[i] & (1u << b)) {
        size_t next = i * 8 + (size_t)b + 1;
        ((unsigned char *)c)[next / 8] |= (unsigned char)(1u << (next % 8));
        return;
      }
}

static void JNICALL on_vt_unmount(jvmtiEnv *jv, JNIEnv *jni, jthread vt) {
  if (!atomic_load_explicit(&l_on, memory_order_acquire)) return;
  atomic_fetch_add(&l_in_cb, 1);
  int64_t t0 = mono_ns();
  void *old = NULL;
  if ((*jv)->GetThreadLocalStorage(jv, vt, &old) == JVMTI_ERROR_NONE) free(old);
  lock_rec *r = new_rec('v');
  if (r) {
    r->t0 = t0;
    if ((*jv)->GetStackTrace(jv, vt, 0, l_depth, r->frames, &r->n) != JVMTI_ERROR_NONE) r->n = 0;
    thread_name(jv, jni, vt, r->thread, sizeof(r->thread));
    jobject blocker = l_park_blocker ? (*jni)->GetObjectField(jni, vt, l_park_blocker) : NULL;
    if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
    if (blocker) {
      class_of(jv, jni, blocker, r->cls, sizeof(r->cls));
      park_holder(jv, jni, blocker, r);
      (*jni)->DeleteLocalRef(jni, blocker);
    } else if (tl_vt_monitor && tl_vt_monitor->gen == r->gen) {
      // unmounted entering a contended monitor (JDK 24+): the monitor its Enter event gave
      r->kind = 'V';
      memcpy(r->cls, tl_vt_monitor->cls, sizeof(r->cls));
      memcpy(r->holder, tl_vt_monitor->holder, sizeof(r->holder));
      r->holder_n = tl_vt_monitor->holder_n;
      memcpy(r->holder_frames, tl_vt_monitor->holder_frames, sizeof(r->holder_frames));
    }
  }
  free(tl_vt_monitor);
  tl_vt_monitor = NULL;
  if ((*jv)->SetThreadLocalStorage(jv, vt, r) != JVMTI_ERROR_NONE) free(r);
  atomic_fetch_add_explicit(&l_cb_ns, (uint64_t)(mono_ns() - t0), memory_order_relaxed);
  atomic_fetch_sub(&l_in_cb, 1);
}

static void JNICALL on_vt_mount(jvmtiEnv *jv, JNIEnv *jni, jthread vt) {
  (void)jni;
  lock_rec *r = NULL;
  if ((*jv)->GetThreadLocalStorage(jv, vt, (void **)&r) != JVMTI_ERROR_NONE || !r) return;
  (*jv)->SetThreadLocalStorage(jv, vt, NULL);
  if (!atomic_load_explicit(&l_on, memory_order_acquire) || r->gen != atomic_load(&l_gen)) {
    free(r);
    return;
  }
  r->end = mono_ns();
  r->tid = (int)syscall(SYS_gettid); // the carrier it is mounted on again
  atomic_fetch_add_explicit(&l_vt_waits, 1, memory_order_relaxed);
  push_rec(r);
}

// A virtual thread that ends is not mounted again: its last record is freed here.
static void JNICALL on_vt_end(jvmtiEnv *jv, JNIEnv *jni, jthread vt) {
  (void)jni;
  void *r = NULL;
  if ((*jv)->GetThreadLocalStorage(jv, vt, &r) == JVMTI_ERROR_NONE && r) {
    (*jv)->SetThreadLocalStorage(jv, vt, NULL);
    free(r);
  }
}

#define JVMTI_EVENT_VIRTUAL_THREAD_END_ID 88 // JDK 21's JVMTI_EVENT_VIRTUAL_THREAD_END (not in older headers)

// Adds the capability and finds the extension events; 0 when the JVM follows virtual threads.
static int vthreads_enable(void) {
  jvmtiEnv *jv = l_jvmti;
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof(caps));
  set_vthread_capability(&caps);
  if ((*jv)->AddCapabilities(jv, &caps) != JVMTI_ERROR_NONE) return 122;
  if (l_mount_index < 0 || l_unmount_index < 0) {
    jint n = 0;
    jvmtiExtensionEventInfo *ev = NULL;
    if ((*jv)->GetExtensionEvents(jv, &n, &ev) == JVMTI_ERROR_NONE && ev) {
      for (jint i = 0; i < n; i++) {
        if (ev[i].id && !strcmp(ev[i].id, "com.sun.hotspot.events.VirtualThreadMount")) l_mount_index = ev[i].extension_event_index;
        if (ev[i].id && !strcmp(ev[i].id, "com.sun.hotspot.events.VirtualThreadUnmount")) l_unmount_index = ev[i].extension_event_index;
        for (jint k = 0; k < ev[i].param_count; k++) (*jv)->Deallocate(jv, (unsigned char *)ev[i].params[k].name);
        (*jv)->Deallocate(jv, (unsigned char *)ev[i].params);
        (*jv)->Deallocate(jv, (unsigned char *)ev[i].id);
        (*jv)->Deallocate(jv, (unsigned char *)ev[i].short_description);
      }
      (*jv)->Deallocate(jv, (unsigned char *)ev);
    }
  }
  if (l_mount_index < 0 || l_unmount_index < 0) {
    (*jv)->RelinquishCapabilities(jv, &caps);
    return 122;
  }
  // HotSpot posts an extension event once it has a callback and is enabled under its index
  (*jv)->SetExtensionEventCallback(jv, l_unmount_index, (jvmtiExtensionEvent)on_vt_unmount);
  (*jv)->SetExtensionEventCallback(jv, l_mount_index, (jvmtiExtensionEvent)on_vt_mount);
  (*jv)->SetEventNotificationMode(jv, JVMTI_ENABLE, (jvmtiEvent)l_unmount_index, NULL);
  (*jv)->SetEventNotificationMode(jv, JVMTI_ENABLE, (jvmtiEvent)l_mount_index, NULL);
  (*jv)->SetEventNotificationMode(jv, JVMTI_ENABLE, (jvmtiEvent)JVMTI_EVENT_VIRTUAL_THREAD_END_ID, NULL);
  return 0;
}

static void vthreads_disable(void) {
  jvmtiEnv *jv = l_jvmti;
  if (l_mount_index >= 0) {
    (*jv)->SetEventNotificationMode(jv, JVMTI_DISABLE, (jvmtiEvent)l_mount_index, NULL);
    (*jv)->SetExtensionEventCallback(jv, l_mount_index, NULL);
  }
  if (l_unmount_index >= 0) {
    (*jv)->SetEventNotificationMode(jv, JVMTI_DISABLE, (jvmtiEvent)l_unmount_index, NULL);
    (*jv)->SetExtensionEventCallback(jv, l_unmount_index, NULL);
  }
  (*jv)->SetEventNotificationMode(jv, JVMTI_DISABLE, (jvmtiEvent)JVMTI_EVENT_VIRTUAL_THREAD_END_ID, NULL);
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof(caps));
  set_vthread_capability(&caps);
  (*jv)->RelinquishCapabilities(jv, &caps);
}

// ---- names (service thread) ----

static java_method *lock_lookup_method(JNIEnv *jni, jmethodID id) { return method_get(&l_methods, l_jvmti, jni, id, l_svc.out); }

static void write_rec(JNIEnv *jni, lock_rec *r) {
  for (jint f = 0; f < r->n; f++) lock_lookup_method(jni, r->frames[f].method); // M lines first
  for (jint f = 0; f < r->holder_n; f++) lock_lookup_method(jni, r->holder_frames[f].method);
  fprintf(l_svc.out, "W\t%c\t%d\t%lld\t%lld\t%s\t%s\t%s\t", r->kind, r->tid, (long long)r->end, (long long)(r->end - r->t0), r->thread, r->cls, r->holder);
  if (!r->holder_n) fputc('-', l_svc.out);
  for (jint f = 0; f < r->holder_n; f++) {
    java_method *m = lock_lookup_method(jni, r->holder_frames[f].method);
    fprintf(l_svc.out, "%s%d:%lld:%d", f ? "," : "", m ? m->index : 0, (long long)r->holder_frames[f].location, method_line(m, r->holder_frames[f].location));
  }
  for (jint f = 0; f < r->n; f++) {
    java_method *m = lock_lookup_method(jni, r->frames[f].method);
    fprintf(l_svc.out, "\t%d:%lld:%d", m ? m->index : 0, (long long)r->frames[f].location, method_line(m, r->frames[f].location));
  }
  fputc('\n', l_svc.out);
}

static void drain_recs(JNIEnv *jni) {
  pthread_mutex_lock(&l_qlock);
  lock_rec *list = l_qhead;
  l_qhead = NULL;
  l_qtail = &l_qhead;
  pthread_mutex_unlock(&l_qlock);
  while (list) {
    lock_rec *r = list;
    list = r->next;
    if (r->gen == atomic_load(&l_gen)) write_rec(jni, r);
    free(r);
  }
}

// ---- parks (service thread) ----

static void end_episode(JNIEnv *jni, int i, int64_t now) {
  parked_t *p = &l_parked[i];
  if (p->rec) {
    if (!p->rec->end) p->rec->end = now;
    atomic_fetch_add_explicit(&l_parks, 1, memory_order_relaxed);
    write_rec(jni, p->rec);
    free(p->rec);
  }
  if (p->thread) (*jni)->DeleteGlobalRef(jni, p->thread);
  if (p->blocker) (*jni)->DeleteGlobalRef(jni, p->blocker);
  l_parked[i] = l_parked[--l_nparked];
  memset(&l_parked[l_nparked], 0, sizeof(parked_t));
}

static void end_all_episodes(JNIEnv *jni, int64_t now) {
  while (l_nparked) end_episode(jni, l_nparked - 1, now);
}

// One look at every platform thread: parked ones extend or start an episode, episodes not seen
// parked in this look end. `elapsed` is the time since the previous look.
static void look(JNIEnv *jni, unsigned number, int64_t elapsed) {
  jvmtiEnv *jv = l_jvmti;
  int64_t t0 = mono_ns();
  if ((*jni)->PushLocalFrame(jni, 64) != 0) return;
  jint n = 0;
  jthread *threads = NULL;
  if ((*jv)->GetAllThreads(jv, &n, &threads) == JVMTI_ERROR_NONE) {
    for (jint i = 0; i < n; i++) {
      jint st = 0;
      if ((*jv)->GetThreadState(jv, threads[i], &st) != JVMTI_ERROR_NONE || !(st & JVMTI_THREAD_STATE_PARKED)) {
        (*jni)->DeleteLocalRef(jni, threads[i]);
        continue;
      }
      jobject blocker = l_park_blocker ? (*jni)->GetObjectField(jni, threads[i], l_park_blocker) : NULL;
      if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
      int at = -1;
      for (int k = 0; k < l_nparked; k++)
        if ((*jni)->IsSameObject(jni, l_parked[k].thread, threads[i])) {
          at = k;
          break;
        }
      if (at >= 0 && l_parked[at].seen + 1 == number && (*jni)->IsSameObject(jni, l_parked[at].blocker, blocker)) {
        lock_rec *r = l_parked[at].rec;
        int64_t waited = r->end - r->t0 + elapsed;
        l_parked[at].seen = number;
        r->end = t0; // the last look that saw it parked
        r->t0 = t0 - waited;
      } else {
        if (at >= 0) end_episode(jni, at, t0);
        if (l_nparked < MAX_PARKED) {
          lock_rec *r = new_rec('p');
          if (r) {
            // weighed end - t0: the intervals before each look that saw it parked
            r->end = t0;
            r->t0 = t0 - elapsed;
            if ((*jv)->GetStackTrace(jv, threads[i], 0, l_depth, r->frames, &r->n) != JVMTI_ERROR_NONE) r->n = 0;
            thread_name(jv, jni, threads[i], r->thread, sizeof(r->thread));
            class_of(jv, jni, blocker, r->cls, sizeof(r->cls));
            park_holder(jv, jni, blocker, r);
            parked_t *p = &l_parked[l_nparked++];
            p->thread = (*jni)->NewGlobalRef(jni, threads[i]);
            p->blocker = blocker ? (*jni)->NewGlobalRef(jni, blocker) : NULL;
            p->seen = number;
            p->rec = r;
          }
        }
      }
      if (blocker) (*jni)->DeleteLocalRef(jni, blocker);
      (*jni)->DeleteLocalRef(jni, threads[i]);
    }
    (*jv)->Deallocate(jv, (unsigned char *)threads);
  }
  (*jni)->PopLocalFrame(jni, NULL);
  // episodes not seen parked in this look are over
  for (int k = 0; k < l_nparked;) {
    if (l_parked[k].seen != number) end_episode(jni, k, t0);
    else k++;
  }
  atomic_fetch_add_explicit(&l_looks, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&l_look_ns, (uint64_t)(mono_ns() - t0), memory_order_relaxed);
}

static void forget_methods(void) { method_table_clear(&l_methods, l_jvmti); }

// A class or field the running JDK may not have (each release lays these classes out a little
// differently): NULL, with the exception cleared, when it is absent.
static jclass optional_class(JNIEnv *jni, const char *name) {
  jclass c = (*jni)->FindClass(jni, name);
  if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
  return c;
}

static jfieldID optional_field(JNIEnv *jni, jclass c, const char *name, const char *sig) {
  if (!c) return NULL;
  jfieldID f = (*jni)->GetFieldID(jni, c, name, sig);
  if ((*jni)->ExceptionCheck(jni)) (*jni)->ExceptionClear(jni);
  return f;
}

// A global reference to c (NULL stays NULL); the local one is dropped.
static jclass global_class(JNIEnv *jni, jclass c) {
  if (!c) return NULL;
  jclass g = (jclass)(*jni)->NewGlobalRef(jni, c);
  (*jni)->DeleteLocalRef(jni, c);
  return g;
}

// Thread.parkBlocker and .tid, AbstractOwnableSynchronizer.exclusiveOwnerThread, the read-write
// lock's state (int before JDK 25, long from it) and the classes tested against (attach thread, once).
static void resolve_fields(JNIEnv *jni) {
  static int done;
  if (done) return;
  done = 1;
  jclass thr = optional_class(jni, "java/lang/Thread");
  l_park_blocker = optional_field(jni, thr, "parkBlocker", "Ljava/lang/Object;");
  l_thread_tid = optional_field(jni, thr, "tid", "J");
  if (thr) (*jni)->DeleteLocalRef(jni, thr);
  jclass aos = optional_class(jni, "java/util/concurrent/locks/AbstractOwnableSynchronizer");
  l_owner_field = optional_field(jni, aos, "exclusiveOwnerThread", "Ljava/lang/Thread;");
  l_aos = global_class(jni, aos);
  jclass aqs = optional_class(jni, "java/util/concurrent/locks/AbstractQueuedSynchronizer");
  l_aqs_state = optional_field(jni, aqs, "state", "I");
  if (aqs) (*jni)->DeleteLocalRef(jni, aqs);
  jclass aqls = optional_class(jni, "java/util/concurrent/locks/AbstractQueuedLongSynchronizer");
  l_aqls_state = optional_field(jni, aqls, "state", "J");
  l_aqls = global_class(jni, aqls);
  l_rwsync = global_class(jni, optional_class(jni, "java/util/concurrent/locks/ReentrantReadWriteLock$Sync"));
  l_vthread_class = global_class(jni, optional_class(jni, "java/lang/BaseVirtualThread"));
}

static void locks_quiesce(void);

static void *locks_thread(void *arg) {
  (void)arg;
  JNIEnv *jni = service_attach(l_vm, "ebpf-studio-lk", "ebpf-studio-locks");
  if (!jni) return NULL;
  unsigned number = 0;
  int64_t last_look = 0, last_beat = 0;
  pthread_mutex_lock(&l_svc.lock);
  for (;;) {
    while (!l_svc.out) {
      pthread_cond_wait(&l_svc.cond, &l_svc.lock); // idle between sessions
      last_look = 0;
    }
    int64_t now = mono_ns();
    if (!l_svc.stop_wanted && l_locks) {
      number++;
      look(jni, number, last_look ? now - last_look : l_period_ns);
      last_look = now;
    }
    drain_recs(jni);
    if (service_orphaned(&l_svc)) {
      locks_quiesce(); // the reader is gone or the file full: end as a stop would
      l_svc.stop_wanted = 1;
    }
    if (l_svc.stop_wanted) {
      end_all_episodes(jni, now);
      drain_recs(jni);
      forget_methods();
      fprintf(l_svc.out, "E\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n", (unsigned long long)atomic_load(&l_monitor_waits), (unsigned long long)atomic_load(&l_parks), (unsigned long long)atomic_load(&l_looks),
              (unsigned long long)atomic_load(&l_cb_ns), (unsigned long long)atomic_load(&l_look_ns), (unsigned long long)atomic_load(&l_vt_waits));
      if (l_svc.orphaned == SERVICE_READER_GONE) service_discard(&l_svc);
      service_ended(&l_svc);
      continue;
    }
    if (now - last_beat >= 200000000LL) {
      fprintf(l_svc.out, "T\t%lld\n", (long long)now);
      fflush(l_svc.out);
      last_beat = now;
    }
    service_sleep(&l_svc, l_period_ns);
  }
  return NULL;
}

static int locks_initialize(JavaVM *vm) {
  jvmtiEnv *jv = NULL;
  if ((*vm)->GetEnv(vm, (void **)&jv, JVMTI_VERSION_1_2) != JNI_OK || !jv) return 120;
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof(caps));
  caps.can_generate_monitor_events = 1;
  caps.can_get_monitor_info = 1;
  if ((*jv)->AddCapabilities(jv, &caps) != JVMTI_ERROR_NONE) {
    (*jv)->DisposeEnvironment(jv);
    return 121;
  }
  method_capabilities(jv);
  memset(&caps, 0, sizeof(caps));
  caps.can_get_bytecodes = 1;
  (*jv)->AddCapabilities(jv, &caps); // without it a compiled waiter's line may be the one after `synchronized`
  // JDK 21's callback table: the older headers' table, then VirtualThreadStart (87) and
  // VirtualThreadEnd (88). A JVM older than 21 reads only the size it knows.
  struct {
    jvmtiEventCallbacks base;
    void *virtual_thread_start;
    void (JNICALL *virtual_thread_end)(jvmtiEnv *, JNIEnv *, jthread);
  } cb;
  memset(&cb, 0, sizeof(cb));
  cb.base.MonitorContendedEnter = on_contended_enter;
  cb.base.MonitorContendedEntered = on_contended_entered;
  cb.virtual_thread_end = on_vt_end;
  if ((*jv)->SetEventCallbacks(jv, (jvmtiEventCallbacks *)&cb, sizeof(cb)) != JVMTI_ERROR_NONE) (*jv)->SetEventCallbacks(jv, &cb.base, sizeof(cb.base));
  l_vm = vm;
  l_jvmti = jv;
  l_initialized = 1;
  return 0;
}

// The service thread, started by the first session once its events are on: a program (or a test)
// that sees the thread "ebpf-studio-locks" knows every contended enter from then on is timed.
static void start_thread_once(void) {
  static int started;
  if (started) return;
  started = 1;
  service_spawn(locks_thread);
}

static void set_events(jvmtiEventMode mode) {
  (*l_jvmti)->SetEventNotificationMode(l_jvmti, mode, JVMTI_EVENT_MONITOR_CONTENDED_ENTER, NULL);
  (*l_jvmti)->SetEventNotificationMode(l_jvmti, mode, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED, NULL);
}

// What a stop does before the service thread ends the file: no callback records any more. Also
// called by the service thread itself (service_orphaned); the exchange keeps a stop arriving
// meanwhile from switching the virtual-thread events off twice.
static void locks_quiesce(void) {
  atomic_store_explicit(&l_on, 0, memory_order_release);
  if (atomic_exchange(&l_vthreads_on, 0)) vthreads_disable();
  if (l_locks || l_vthreads) set_events(JVMTI_DISABLE);
  l_vthreads = 0;
  for (int i = 0; i < 20000 && atomic_load(&l_in_cb) > 0; i++) usleep(100);
}

static void locks_stop(void) {
  locks_quiesce();
  service_end(&l_svc);
}

static int locks_start(const char *out, int depth, int64_t period_ns, int vthreads, int locks, int owner) {
  locks_stop(); // a session the helper never stopped (it died): end it, start over in the new file
  if (vthreads) {
    int rc = vthreads_enable();
    if (rc && !locks) return rc;
    if (rc) vthreads = 0; // monitors and parks only
  }
  pthread_mutex_lock(&l_svc.lock);
  FILE *f = service_open(out);
  if (!f) {
    pthread_mutex_unlock(&l_svc.lock);
    if (vthreads) vthreads_disable();
    return 103;
  }
  l_vthreads = vthreads;
  atomic_store(&l_vthreads_on, vthreads);
  l_locks = locks;
  l_monitor_owner = owner;
  l_depth = depth;
  l_period_ns = period_ns;
  atomic_fetch_add(&l_gen, 1);
  atomic_store(&l_monitor_waits, 0);
  atomic_store(&l_parks, 0);
  atomic_store(&l_looks, 0);
  atomic_store(&l_cb_ns, 0);
  atomic_store(&l_look_ns, 0);
  atomic_store(&l_vt_waits, 0);
  fprintf(f, "L\t%d\t%lld\t%lld\n", (int)getpid(), (long long)mono_ns(), (long long)period_ns);
  fflush(f);
  atomic_store_explicit(&l_on, 1, memory_order_release);
  if (locks || vthreads) set_events(JVMTI_ENABLE); // with vthreads only, for a virtual waiter's monitor
  start_thread_once();
  service_begin(&l_svc, f);
  pthread_mutex_unlock(&l_svc.lock);
  return 0;
}

int locks_handle(JavaVM *vm, const char *options) {
  char opts[1024];
  snprintf(opts, sizeof(opts), "%s", options);
  int start = 0, stop = 0, depth = 64, vthreads = 0, locks = 1, owner = 1;
  long long period_us = 2000;
  const char *out = NULL;
  char *save = NULL;
  for (char *tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (!strcmp(tok, "locks")) start = 1;
    else if (!strcmp(tok, "locksstop")) stop = 1;
    else if (!strcmp(tok, "locksprobe")) ;
    else if (!strcmp(tok, "vthreads")) vthreads = 1;
    else if (!strcmp(tok, "nolocks")) locks = 0;
    else if (!strcmp(tok, "noowner")) owner = 0;
    else if (!strncmp(tok, "out=", 4)) out = tok + 4;
    else if (!strncmp(tok, "depth=", 6)) depth = atoi(tok + 6);
    else if (!strncmp(tok, "period=", 7)) period_us = atoll(tok + 7);
    else return 104;
  }
  if (depth < 1 || depth > LOCK_MAX_DEPTH || period_us < 100 || period_us > 1000000 || (start && (!out || out[0] != '/')) || (start && stop)) return 104;
  if (!l_initialized) {
    if (stop) return 0; // nothing ever started
    int rc = locks_initialize(vm);
    if (rc) return rc;
  }
  JNIEnv *jni = NULL;
  if (start && (*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_6) == JNI_OK) resolve_fields(jni);
  if (stop) locks_stop();
  if (!locks && !vthreads) return 104;
  if (start) return locks_start(out, depth, (int64_t)period_us * 1000, vthreads, locks, owner);
  return 0;
}
