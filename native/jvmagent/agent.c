// eBPF Studio's JVMTI agent: Java stacks through AsyncGetCallTrace (AGCT) for the CPU profiler.
// Loaded into a running JVM with the attach command `load <abs path> true <options>`; every later
// `load` of the same file calls Agent_OnAttach again in the same copy (dlopen shares it), which is
// how the helper starts and stops it. JVMTI agents cannot be unloaded: after `stop` the agent
// stays, idle (no timer, no signal, no JVMTI event, its thread asleep), and the next profile
// reuses it.
//
// Sampling design (chosen over timers inside the agent): the profiler's BPF cpu-clock program,
// for a sample of the target process, calls bpf_send_signal_thread(SIGPROF). The signal is taken
// by exactly the sampled thread on its way back to user mode, so AGCT walks the thread the kernel
// just sampled: same frequency as the user chose, per-thread CPU time, no setitimer bias towards
// whichever thread happens to take a process-wide signal, and no per-thread timers to create and
// tear down as threads come and go. The BPF sample (kernel + native stack, tid, ktime) and our
// record (tid, CLOCK_MONOTONIC ns, which is bpf_ktime_get_ns's clock) are joined by the helper
// on tid and the nearest following timestamp.
//
// Async-signal safety: the handler finds the thread's JNIEnv through HotSpot's pthread key (see
// signal_safe_env), calls AGCT, reads the clock and gettid, and writes into a slot of
// a ring preallocated at start. No malloc, no locks, no JNI functions. A service thread drains the
// ring, resolves method ids to names and BCIs to lines with JVMTI (cached per jmethodID), and
// appends text records to a file in the JVM's own /tmp, which the helper reads through
// /proc/PID/root (works across mount and pid namespaces; see extension/tracers/javaAgent/agent.ts for
// why a file rather than a socket).
//
// File records, one a line, tab separated: A (agent ready), M (a method's names), S (one sample),
// T (watermark: no S with an earlier timestamp follows), E (end: counters, file closed).
//
// Options (comma separated): start,out=<path>,depth=<n> | stop | probe
// Return code of Agent_OnAttach: 0 ok; 100 no AsyncGetCallTrace; 101 SIGPROF has another handler;
// 102 JVMTI unavailable; 103 cannot open the output file; 104 bad options; 105 out of memory;
// 106 HotSpot's thread key not found (an unknown JVM build).
// Nonzero only while nothing has been installed yet, because HotSpot dlcloses a library whose
// first Agent_OnAttach fails.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <jni.h>
#include <jvmti.h>
#include <jvmticmlr.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "locks.h"
#include "methods.h"
#include "service.h"

// Not in any JDK header: HotSpot exports it from libjvm.so (prims/forte.cpp).
typedef struct {
  jint lineno; // BCI for Java frames, -3 for a native method, -1 unknown
  jmethodID method_id;
} agct_frame;

typedef struct {
  JNIEnv *env_id;
  jint num_frames; // >0 frames, <=0 an error code (see the helper's decoder)
  agct_frame *frames;
} agct_trace;

typedef void (*agct_fn)(agct_trace *, jint, void *);

#define MAX_DEPTH 256
#define SLOTS 1024 // power of two
#define NOT_JAVA_THREAD (-100) // our code: the sampled thread has no JNIEnv (GC, JIT, VM threads)

enum { SLOT_FREE = 0, SLOT_WRITING = 1, SLOT_READY = 2 };

typedef struct {
  _Atomic int state;
  int tid;
  int64_t ts;
  uintptr_t pc; // the interrupted instruction: which code (an nmethod, the interpreter) the leaf ran in
  int num_frames;
  int recovered; // 0: AGCT walked the signal's context; else the retry (walk_recovery) that walked it
  agct_frame frames[MAX_DEPTH];
} slot_t;

static JavaVM *g_vm;
static jvmtiEnv *g_jvmti;
static agct_fn g_agct;
static slot_t *g_slots;
static _Atomic int g_active;        // handler records only while set
static _Atomic int g_in_handler;    // handlers running now (stop waits for zero)
static _Atomic unsigned g_next;     // slot cursor
static _Atomic uint64_t g_dropped;  // ring full
static _Atomic uint64_t g_signals;
// Wall time spent in the handler, summed: what each sample costs the sampled thread in the JVM
// (the AsyncGetCallTrace walk included), reported at the end (E record) for the overhead figures.
static _Atomic uint64_t g_handler_ns;
static int g_depth = 128;
static int g_initialized;
static agent_service g_svc = AGENT_SERVICE_INIT; // the profile's service thread and file (open while profiling)
static int g_code_events; // the JVM granted can_generate_compiled_method_load_events

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

// The sampled thread's JNIEnv without JNI's GetEnv: GetEnv reads HotSpot's __thread variable,
// and a thread's first touch of a dlopened library's TLS goes through __tls_get_addr, which may
// malloc, so a signal landing in malloc on a new thread deadlocks (seen in testing). HotSpot also
// keeps the current Thread* under a pthread key (ThreadLocalStorage, what its own signal handlers
// use), and pthread_getspecific is async-signal-safe. The key and the offset of the JNIEnv inside
// a JavaThread are learnt once on a Java thread (find_thread_key). A thread that is not a
// JavaThread (GC, VM threads) has no JNIEnv there: its would-be env is read with
// process_vm_readv, which fails instead of faulting, and must point at the JNI function table.
static pthread_key_t g_thread_key;
static intptr_t g_env_offset;
static void *g_jni_functions;

static JNIEnv *signal_safe_env(void) {
  char *t = pthread_getspecific(g_thread_key);
  if (!t) return NULL;
  JNIEnv *env = (JNIEnv *)(t + g_env_offset);
  void *fn = NULL;
  struct iovec local = {&fn, sizeof(fn)}, remote = {env, sizeof(fn)};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof(fn) || fn != g_jni_functions) return NULL;
  return env;
}

static int find_thread_key(JNIEnv *env) {
  for (pthread_key_t k = 0; k < PTHREAD_KEYS_MAX; k++) {
    char *v = pthread_getspecific(k);
    intptr_t off = (char *)env - v;
    if (v && off > 0 && off < 0x4000) {
      g_thread_key = k;
      g_env_offset = off;
      g_jni_functions = *(void **)env;
      return 1;
    }
  }
  return 0;
}

// Reading a register out of the signal's ucontext is a plain load: async-signal-safe.
static uintptr_t interrupted_pc(void *ucontext) {
  ucontext_t *uc = ucontext;
#if defined(__x86_64__)
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  return (uintptr_t)uc->uc_mcontext.pc;
#else
  (void)uc;
  return 0; // unknown: the helper then infers the leaf's frame type like any caller's
#endif
}

// ---- recovery of samples AsyncGetCallTrace could not walk ----
//
// AGCT gives up with "in Java code, unknown frame" (-5) when the interrupted PC is in compiled
// code whose frame is not complete (the prologue before the frame is pushed, the epilogue after
// it is popped) or in a stub without a frame of its own (vtable/itable stubs, StubRoutines
// leaves), and with "stack not walkable" (-6) when the top frame it builds has no safe sender.
// In all these the caller's frame is intact one step up: the return address sits at the stack
// pointer (no frame pushed yet, or already popped), one slot above it (the saved frame pointer
// was pushed, the frame not allocated yet), or behind the frame pointer (a stub or VM leaf with a
// frame-pointer frame). Profilers that walk HotSpot from a signal (async-profiler among them)
// retry AGCT from such a corrected context; this does the same with four guesses, each handed to
// AGCT, which validates the context it is given (the PC must be in code it knows, the frame safe
// for its sender) and walks from there. The sample then starts at the caller: the leaf that was
// being entered or left is lost, and the helper puts it back from the interrupted PC and the
// code cache where that PC is in a compiled method.
//
// Runs only after a failed walk (nothing more per sample otherwise). Async-signal-safe: the
// interrupted stack is read with process_vm_readv, which fails instead of faulting on a bad
// address, and the context is a copy on this stack.
enum { RECOVER_NONE = 0, RECOVER_RET_AT_SP = 1, RECOVER_RET_ABOVE_FP_PUSH = 2, RECOVER_FP_CHAIN = 3, RECOVER_STACK_SCAN = 4 };
#define SCAN_WORDS 24

static int read_word(uintptr_t addr, uintptr_t *out) {
  struct iovec local = {out, sizeof(*out)}, remote = {(void *)addr, sizeof(*out)};
  return addr && process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof(*out);
}

// -5 and -6 only: in the other failures AGCT walks from the thread's last-Java-frame anchor, not
// from the context, so a corrected context changes nothing.
static int agct_failed_in_java(int code) { return code == -5 || code == -6; }

static int walk_recovery(void *ucontext, agct_trace *trace) {
#if defined(__x86_64__)
  ucontext_t uc = *(ucontext_t *)ucontext;
  greg_t *g = uc.uc_mcontext.gregs;
  const uintptr_t sp = (uintptr_t)g[REG_RSP], fp = (uintptr_t)g[REG_RBP];
  uintptr_t ret, saved_fp;
  // 1: the return address at the stack pointer (a frameless stub; a prologue before `push rbp`;
  // an epilogue after `pop rbp`, at the `ret` or the safepoint poll before it).
  if (read_word(sp, &ret)) {
    g[REG_RIP] = (greg_t)ret;
    g[REG_RSP] = (greg_t)(sp + 8);
    trace->num_frames = 0;
    g_agct(trace, g_depth, &uc);
    if (trace->num_frames > 0) return RECOVER_RET_AT_SP;
  }
  // 2: the caller's frame pointer pushed, then the return address (a prologue right after
  // `push rbp`; an epilogue between freeing the frame and `pop rbp`).
  if (read_word(sp, &saved_fp) && read_word(sp + 8, &ret)) {
    g[REG_RIP] = (greg_t)ret;
    g[REG_RSP] = (greg_t)(sp + 16);
    g[REG_RBP] = (greg_t)saved_fp;
    trace->num_frames = 0;
    g_agct(trace, g_depth, &uc);
    if (trace->num_frames > 0) return RECOVER_RET_ABOVE_FP_PUSH;
  }
  // 3: a few frame-pointer frames up (a stub or a VM leaf with a frame of its own). The frame
  // pointer must lie above the stack pointer and near it, or it is a general register in JIT
  // code, not a frame.
  uintptr_t f = fp;
  for (int depth = 0; depth < 4; depth++) {
    if (f <= sp || f - sp > (1u << 20) || (f & 7) || !read_word(f, &saved_fp) || !read_word(f + 8, &ret)) break;
    g[REG_RIP] = (greg_t)ret;
    g[REG_RSP] = (greg_t)(f + 16);
    g[REG_RBP] = (greg_t)saved_fp;
    trace->num_frames = 0;
    g_agct(trace, g_depth, &uc);
    if (trace->num_frames > 0) return RECOVER_FP_CHAIN;
    f = saved_fp;
  }
  // 4: the nearest return address above the stack pointer, found by trying the words there in
  // turn (the interpreter's method entry keeps the return address in a register while it lays
  // out the locals, and adapters and stubs move the stack pointer before their frame exists).
  // AGCT accepts a word only when it is a PC in code it knows and the frame it builds there has a
  // safe sender, so data words fail; the walk then starts at a caller further up.
  uintptr_t words[SCAN_WORDS];
  struct iovec local = {words, sizeof(words)}, remote = {(void *)sp, sizeof(words)};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof(words)) {
    for (int i = 2; i < SCAN_WORDS; i++) { // words 0 and 1: tried by guesses 1 and 2
      if (words[i] < 4096) continue;
      g[REG_RIP] = (greg_t)words[i];
      g[REG_RSP] = (greg_t)(sp + 8 * (uintptr_t)(i + 1));
      g[REG_RBP] = (greg_t)fp;
      trace->num_frames = 0;
      g_agct(trace, g_depth, &uc);
      if (trace->num_frames > 0) return RECOVER_STACK_SCAN;
    }
  }
#else
  (void)ucontext;
  (void)trace;
#endif
  return RECOVER_NONE;
}

static void on_sigprof(int sig, siginfo_t *info, void *ucontext) {
  (void)sig;
  (void)info;
  if (!atomic_load_explicit(&g_active, memory_order_acquire)) return;
  atomic_fetch_add(&g_in_handler, 1);
  int saved_errno = errno;
  int64_t entered = now_ns();
  atomic_fetch_add_explicit(&g_signals, 1, memory_order_relaxed);
  slot_t *s = NULL;
  for (int tries = 0; tries < 8 && !s; tries++) {
    unsigned i = atomic_fetch_add_explicit(&g_next, 1, memory_order_relaxed) & (SLOTS - 1);
    int expect = SLOT_FREE;
    if (atomic_compare_exchange_strong(&g_slots[i].state, &expect, SLOT_WRITING)) s = &g_slots[i];
  }
  if (!s) {
    atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
  } else {
    s->tid = (int)syscall(SYS_gettid);
    s->pc = interrupted_pc(ucontext);
    JNIEnv *env = signal_safe_env();
    if (!env) {
      s->num_frames = NOT_JAVA_THREAD;
      s->recovered = RECOVER_NONE;
    } else {
      agct_trace trace = {env, 0, s->frames};
      g_agct(&trace, g_depth, ucontext);
      s->recovered = RECOVER_NONE;
      if (agct_failed_in_java(trace.num_frames)) {
        int failed = trace.num_frames;
        s->recovered = walk_recovery(ucontext, &trace);
        if (!s->recovered) trace.num_frames = failed; // the first answer says why
      }
      s->num_frames = trace.num_frames;
    }
    // Stamped at entry, not at the end of the walk: a handler that runs long (preempted on a
    // loaded machine) can be sampled again while it runs, and that sample's signal is handled
    // right after. The helper pairs a sample with the first record of its thread stamped at or
    // after it and before the thread's next sample: an end stamp would fall after that next
    // sample and leave this sample unpaired. Stamped after g_in_handler rose, which the
    // service thread's watermark relies on.
    s->ts = entered;
    atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
  }
  atomic_fetch_add_explicit(&g_handler_ns, (uint64_t)(now_ns() - entered), memory_order_relaxed);
  errno = saved_errno;
  atomic_fetch_sub(&g_in_handler, 1);
}

// ---- method cache (service thread only) ----

// Methods named in the current profile's file (service thread, under g_svc.lock).
static method_table g_methods;

static java_method *lookup_method(JNIEnv *jni, jmethodID id) { return method_get(&g_methods, g_jvmti, jni, id, g_svc.out); }

// Each profile has its own file, so names are announced anew in it (called under g_svc.lock).
static void forget_methods(void) { method_table_clear(&g_methods, g_jvmti); }

// Drains ready slots into the output file. Returns how many.
static int drain(JNIEnv *jni) {
  int n = 0;
  for (int i = 0; i < SLOTS; i++) {
    slot_t *s = &g_slots[i];
    if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_READY) continue;
    n++;
    int nf = s->num_frames;
    if (nf > 0) {
      // resolve first so the M lines precede the S line that uses them
      for (int f = 0; f < nf; f++) lookup_method(jni, s->frames[f].method_id);
    }
    // S <tid> <ts ns> <num_frames or error code> @<pc hex> [~<recovery>] then per frame
    // "<method index>:<bci>:<line>", leaf first
    fprintf(g_svc.out, "S\t%d\t%lld\t%d\t@%llx", s->tid, (long long)s->ts, nf, (unsigned long long)s->pc);
    if (s->recovered) fprintf(g_svc.out, "\t~%d", s->recovered);
    for (int f = 0; f < nf; f++) {
      java_method *m = lookup_method(jni, s->frames[f].method_id);
      jint bci = s->frames[f].lineno;
      fprintf(g_svc.out, "\t%d:%d:%d", m ? m->index : 0, bci, method_line(m, bci));
    }
    fputc('\n', g_svc.out);
    atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
  }
  return n;
}

// ---- code cache: which compiled code exists, and what each nmethod inlined ----
//
// AsyncGetCallTrace gives a method and a BCI per frame, never whether that frame ran in the
// interpreter or in compiled code, nor which frames a compiler inlined into one physical frame.
// The helper rebuilds that from the code cache's history during the profile: every nmethod's
// address range, its method, and its inline tree (the JVMTI_CMLR_INLINE_INFO records of
// CompiledMethodLoad: for each PC with debug info, the chain of methods and BCIs inlined there),
// plus when it was freed (CompiledMethodUnload), plus where the interpreter and the stubs sit
// (DynamicCodeGenerated). GenerateEvents replays the code that existed before the profile.
// The compile level (C1 or C2) is not in JVMTI; the helper asks `jcmd Compiler.codelist` for it
// (extension/tracers/javaAgent/frameTypes.ts says why).
//
// Events arrive on compiler threads, the ServiceThread (HotSpot defers most CompiledMethodLoad
// posts to it) or the attach thread (the replay): never in a signal handler, so they may
// allocate and lock. They are queued here and written to the file by the service thread, which
// owns the method table. Only while a profile runs: between profiles the events are off.
//
// While CompiledMethodLoad is enabled, HotSpot's compilers also record debug info at
// non-safepoint PCs (what -XX:+DebugNonSafepoints does), so code compiled during a profile maps
// an interrupted PC to the exact inlined method and line, where older code can only name the
// nearest safepoint's scope (often the caller an inlined leaf was inlined into). Keeping the
// events on after Stop would give later profiles that precision for code compiled in between,
// at a cost per compilation for the rest of the JVM's life; a stopped agent costs nothing
// instead (a stopped agent costs nothing further). Users who want exact inlined leaves from the start run
// the JVM with -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints.

typedef struct code_event {
  char type; // 'L' nmethod loaded, 'U' freed, 'D' other generated code (interpreter, stubs)
  int64_t ts;
  jmethodID method; // L, U
  uintptr_t addr;
  jint size;
  char *name; // D
  int nchains;
  int *chain_len;   // per chain: frames, innermost first
  jmethodID *chain_m; // all chains' frames, flattened
  jint *chain_bci;
  struct code_event *next;
} code_event;

static pthread_mutex_t g_code_lock = PTHREAD_MUTEX_INITIALIZER;
static code_event *g_code_head, **g_code_tail = &g_code_head;
static _Atomic int g_code_on; // set under g_code_lock: queue events (a profile runs); read alone to skip work
static int g_code_enabled;     // the JVMTI events are on (while a profile runs)

static void push_code_event(code_event *e) {
  pthread_mutex_lock(&g_code_lock);
  if (g_code_on) {
    e->next = NULL;
    *g_code_tail = e;
    g_code_tail = &e->next;
    e = NULL;
  }
  pthread_mutex_unlock(&g_code_lock);
  if (e) {
    free(e->name);
    free(e->chain_len);
    free(e->chain_m);
    free(e->chain_bci);
    free(e);
  }
}

static int same_chain(const PCStackInfo *a, const PCStackInfo *b) {
  if (a->numstackframes != b->numstackframes) return 0;
  for (jint k = 0; k < a->numstackframes; k++)
    if (a->methods[k] != b->methods[k] || a->bcis[k] != b->bcis[k]) return 0;
  return 1;
}

static unsigned chain_hash(const PCStackInfo *p) {
  unsigned h = 2166136261u;
  for (jint k = 0; k < p->numstackframes; k++) h = (h ^ (unsigned)((uintptr_t)p->methods[k] >> 3) ^ ((unsigned)p->bcis[k] << 16)) * 16777619u;
  return h;
}

// Copies the distinct inline chains (two frames or more) of one nmethod's PC records.
static void copy_inline_chains(code_event *e, const void *compile_info) {
  const jvmtiCompiledMethodLoadInlineRecord *rec = NULL;
  for (const jvmtiCompiledMethodLoadRecordHeader *h = compile_info; h; h = h->next)
    if (h->kind == JVMTI_CMLR_INLINE_INFO) rec = (const jvmtiCompiledMethodLoadInlineRecord *)h;
  if (!rec || rec->numpcs <= 0 || !rec->pcinfo) return;
  unsigned cap = 16;
  while (cap < 2u * (unsigned)rec->numpcs) cap <<= 1;
  int *seen = calloc(cap, sizeof(int)); // index+1 into pcinfo of a chain kept, 0 empty
  const PCStackInfo **keep = calloc((size_t)rec->numpcs, sizeof(*keep));
  if (!seen || !keep) goto out;
  int n = 0, total = 0;
  for (jint i = 0; i < rec->numpcs; i++) {
    const PCStackInfo *p = &rec->pcinfo[i];
    if (p->numstackframes < 2 || !p->methods || !p->bcis) continue;
    unsigned j = chain_hash(p) & (cap - 1);
    int dup = 0;
    for (; seen[j]; j = (j + 1) & (cap - 1))
      if (same_chain(&rec->pcinfo[seen[j] - 1], p)) {
        dup = 1;
        break;
      }
    if (dup) continue;
    seen[j] = i + 1;
    keep[n++] = p;
    total += p->numstackframes;
  }
  if (n) {
    e->chain_len = malloc((size_t)n * sizeof(int));
    e->chain_m = malloc((size_t)total * sizeof(jmethodID));
    e->chain_bci = malloc((size_t)total * sizeof(jint));
    if (!e->chain_len || !e->chain_m || !e->chain_bci) goto out; // freed with the event; chains lost, not the nmethod
    int at = 0;
    for (int c = 0; c < n; c++) {
      e->chain_len[c] = keep[c]->numstackframes;
      memcpy(&e->chain_m[at], keep[c]->methods, (size_t)keep[c]->numstackframes * sizeof(jmethodID));
      memcpy(&e->chain_bci[at], keep[c]->bcis, (size_t)keep[c]->numstackframes * sizeof(jint));
      at += keep[c]->numstackframes;
    }
    e->nchains = n;
  }
out:
  free(seen);
  free(keep);
}

static void JNICALL on_compiled_method_load(jvmtiEnv *jvmti, jmethodID method, jint code_size, const void *code_addr, jint map_length, const jvmtiAddrLocationMap *map, const void *compile_info) {
  (void)jvmti, (void)map_length, (void)map;
  if (!atomic_load(&g_code_on)) return; // no profile: nothing to record
  code_event *e = calloc(1, sizeof(*e));
  if (!e) return;
  e->type = 'L';
  e->ts = now_ns();
  e->method = method;
  e->addr = (uintptr_t)code_addr;
  e->size = code_size;
  copy_inline_chains(e, compile_info);
  push_code_event(e);
}

static void JNICALL on_compiled_method_unload(jvmtiEnv *jvmti, jmethodID method, const void *code_addr) {
  (void)jvmti;
  if (!atomic_load(&g_code_on)) return; // no profile: nothing to record
  code_event *e = calloc(1, sizeof(*e));
  if (!e) return;
  e->type = 'U';
  e->ts = now_ns();
  e->method = method;
  e->addr = (uintptr_t)code_addr;
  push_code_event(e);
}

static void JNICALL on_dynamic_code(jvmtiEnv *jvmti, const char *name, const void *address, jint length) {
  (void)jvmti;
  if (!atomic_load(&g_code_on)) return; // no profile: nothing to record
  code_event *e = calloc(1, sizeof(*e));
  if (!e) return;
  e->type = 'D';
  e->ts = now_ns();
  e->addr = (uintptr_t)address;
  e->size = length;
  e->name = strdup(name ? name : "?");
  if (e->name) clean_text(e->name);
  push_code_event(e);
}

static void set_code_events(jvmtiEventMode mode) {
  (*g_jvmti)->SetEventNotificationMode(g_jvmti, mode, JVMTI_EVENT_COMPILED_METHOD_LOAD, NULL);
  (*g_jvmti)->SetEventNotificationMode(g_jvmti, mode, JVMTI_EVENT_COMPILED_METHOD_UNLOAD, NULL);
  (*g_jvmti)->SetEventNotificationMode(g_jvmti, mode, JVMTI_EVENT_DYNAMIC_CODE_GENERATED, NULL);
}

// Writes the queued code events (service thread, under g_svc.lock). An unload of an nmethod whose
// method id no longer resolves still names the address, which is what the helper matches on.
static void drain_code(JNIEnv *jni) {
  pthread_mutex_lock(&g_code_lock);
  code_event *list = g_code_head;
  g_code_head = NULL;
  g_code_tail = &g_code_head;
  pthread_mutex_unlock(&g_code_lock);
  while (list) {
    code_event *e = list;
    list = e->next;
    if (e->type == 'D') {
      // D <ts> <addr hex> <size> <name>
      fprintf(g_svc.out, "D\t%lld\t%llx\t%d\t%s\n", (long long)e->ts, (unsigned long long)e->addr, e->size, e->name ? e->name : "?");
    } else {
      java_method *m = lookup_method(jni, e->method);
      for (int k = 0, at = 0; k < e->nchains; at += e->chain_len[k++])
        for (int f = 0; f < e->chain_len[k]; f++) lookup_method(jni, e->chain_m[at + f]); // M lines first
      // L <ts> <method index> <addr hex> <size> then per inline chain "m:bci,m:bci,..." innermost first
      // U <ts> <method index> <addr hex>
      if (e->type == 'U') fprintf(g_svc.out, "U\t%lld\t%d\t%llx\n", (long long)e->ts, m ? m->index : 0, (unsigned long long)e->addr);
      else {
        fprintf(g_svc.out, "L\t%lld\t%d\t%llx\t%d", (long long)e->ts, m ? m->index : 0, (unsigned long long)e->addr, e->size);
        for (int k = 0, at = 0; k < e->nchains; at += e->chain_len[k++]) {
          fputc('\t', g_svc.out);
          for (int f = 0; f < e->chain_len[k]; f++) {
            java_method *cm = lookup_method(jni, e->chain_m[at + f]);
            fprintf(g_svc.out, "%s%d:%d", f ? "," : "", cm ? cm->index : 0, e->chain_bci[at + f]);
          }
        }
        fputc('\n', g_svc.out);
      }
    }
    free(e->name);
    free(e->chain_len);
    free(e->chain_m);
    free(e->chain_bci);
    free(e);
  }
}

static void profile_quiesce(void);

static void *service_thread(void *arg) {
  (void)arg;
  JNIEnv *jni = service_attach(g_vm, "ebpf-studio-jvm", "ebpf-studio-jvmagent");
  if (!jni) return NULL;
  int64_t last_mark = 0;
  pthread_mutex_lock(&g_svc.lock);
  for (;;) {
    while (!g_svc.out) pthread_cond_wait(&g_svc.cond, &g_svc.lock); // idle between profiles
    // Watermark for the helper's live join: every record stamped before `mark` is in the file
    // once the T line is. A handler stamps its record after entering (g_in_handler > 0) and marks
    // it ready before leaving, so when no handler is running after `mark` was read, every record
    // stamped earlier is ready and this drain writes it. Otherwise no T line this round.
    int64_t mark = now_ns();
    int busy = atomic_load(&g_in_handler);
    drain_code(jni); // code events first: a sample's code (an nmethod queued by then) precedes it in the file
    int drained = drain(jni);
    if (!busy && (drained > 0 || mark - last_mark >= 200000000LL)) {
      // T <ns>: no record with an earlier timestamp will follow (rounds without records: every 200 ms)
      fprintf(g_svc.out, "T\t%lld\n", (long long)mark);
      last_mark = mark;
    }
    if (service_orphaned(&g_svc)) {
      profile_quiesce(); // the reader is gone or the file full: end as a stop would
      g_svc.stop_wanted = 1;
    }
    if (g_svc.stop_wanted) {
      // the caller has cleared g_active, waited for handlers and stopped queueing code events:
      // one last pass empties the code queue and the ring
      drain_code(jni);
      drain(jni);
      fprintf(g_svc.out, "E\t%llu\t%llu\t%llu\n", (unsigned long long)atomic_load(&g_dropped), (unsigned long long)atomic_load(&g_signals), (unsigned long long)atomic_load(&g_handler_ns));
      if (g_svc.orphaned == SERVICE_READER_GONE) service_discard(&g_svc);
      service_ended(&g_svc);
      continue;
    }
    fflush(g_svc.out);
    service_sleep(&g_svc, 20 * 1000000LL);
  }
  return NULL;
}

// ---- jmethodID preallocation: AGCT can only name methods whose ids exist ----

static void prepare_class(jvmtiEnv *jvmti, jclass cls) {
  jint n = 0;
  jmethodID *ids = NULL;
  if ((*jvmti)->GetClassMethods(jvmti, cls, &n, &ids) == JVMTI_ERROR_NONE && ids) (*jvmti)->Deallocate(jvmti, (unsigned char *)ids);
}

static void JNICALL on_class_load(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass cls) {
  (void)jvmti, (void)jni, (void)thread, (void)cls; // required for ClassPrepare to be delivered with ids usable
}

static void JNICALL on_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass cls) {
  (void)jni, (void)thread;
  prepare_class(jvmti, cls);
}

static void set_class_events(jvmtiEventMode mode) {
  (*g_jvmti)->SetEventNotificationMode(g_jvmti, mode, JVMTI_EVENT_CLASS_LOAD, NULL);
  (*g_jvmti)->SetEventNotificationMode(g_jvmti, mode, JVMTI_EVENT_CLASS_PREPARE, NULL);
}

static void prepare_loaded_classes(JNIEnv *jni) {
  jint n = 0;
  jclass *classes = NULL;
  if ((*g_jvmti)->GetLoadedClasses(g_jvmti, &n, &classes) != JVMTI_ERROR_NONE) return;
  for (jint i = 0; i < n; i++) {
    prepare_class(g_jvmti, classes[i]);
    (*jni)->DeleteLocalRef(jni, classes[i]);
  }
  (*g_jvmti)->Deallocate(g_jvmti, (unsigned char *)classes);
}

// Whether SIGPROF's handler belongs to another copy of this agent: an older build, loaded by an
// earlier version of the extension into this long-running JVM (copies are named by content hash,
// so a new build is a new copy). That copy is idle (only its own `start` makes it record) and
// cannot be unloaded; the new copy takes SIGPROF over from it rather than refuse the JVM for the
// rest of its life.
static int handler_is_older_agent(const struct sigaction *old) {
  void *h = (old->sa_flags & SA_SIGINFO) ? (void *)old->sa_sigaction : (void *)old->sa_handler;
  Dl_info info;
  if (!dladdr(h, &info) || !info.dli_fname) return 0;
  const char *base = strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  return h != (void *)on_sigprof && strncmp(base, "ebpf-studio-jvmagent-", strlen("ebpf-studio-jvmagent-")) == 0;
}

static int initialize(JavaVM *vm, JNIEnv *jni) {
  g_vm = vm;
  g_agct = (agct_fn)dlsym(RTLD_DEFAULT, "AsyncGetCallTrace");
  if (!g_agct) {
    void *jvm = dlopen("libjvm.so", RTLD_NOW | RTLD_NOLOAD);
    if (jvm) g_agct = (agct_fn)dlsym(jvm, "AsyncGetCallTrace");
  }
  if (!g_agct) return 100;
  if (!find_thread_key(jni)) return 106;
  struct sigaction old;
  if (sigaction(SIGPROF, NULL, &old) == 0 && (old.sa_flags & SA_SIGINFO ? old.sa_sigaction != NULL : (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) &&
      !handler_is_older_agent(&old))
    return 101; // another profiler (async-profiler, a JFR-less tool) owns SIGPROF: do not steal it
  if ((*vm)->GetEnv(vm, (void **)&g_jvmti, JVMTI_VERSION_1_2) != JNI_OK || !g_jvmti) return 102;
  g_slots = calloc(SLOTS, sizeof(slot_t));
  if (!g_slots) return 105;
  memset(g_slots, 0, SLOTS * sizeof(slot_t)); // touch every page now, not as a fault inside the handler
  method_capabilities(g_jvmti);
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof(caps));
  caps.can_generate_compiled_method_load_events = 1;
  g_code_events = (*g_jvmti)->AddCapabilities(g_jvmti, &caps) == JVMTI_ERROR_NONE; // without it frames carry no type
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof(cb));
  cb.ClassLoad = on_class_load;
  cb.ClassPrepare = on_class_prepare;
  cb.CompiledMethodLoad = on_compiled_method_load;
  cb.CompiledMethodUnload = on_compiled_method_unload;
  cb.DynamicCodeGenerated = on_dynamic_code;
  (*g_jvmti)->SetEventCallbacks(g_jvmti, &cb, sizeof(cb));
  (void)jni; // class events and method ids are set up per profile (do_start)
  // The handler stays installed for the life of the JVM: a SIGPROF reaching a thread with no
  // handler would kill the process, and a late BPF signal can still be in flight after stop.
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sigemptyset(&sa.sa_mask);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  service_spawn(service_thread);
  g_initialized = 1;
  return 0;
}

static int do_start(JNIEnv *jni, const char *out, int depth) {
  // Method ids for every class, then for each one prepared while the profile runs: AGCT names
  // only methods whose ids exist. Events first, so a class prepared in between is not missed.
  // Between profiles these events are off (a class load costs nothing extra), and the classes
  // loaded meanwhile are picked up here: ids that exist already cost a lookup.
  set_class_events(JVMTI_ENABLE);
  prepare_loaded_classes(jni);
  pthread_mutex_lock(&g_svc.lock);
  while (g_svc.stop_wanted) pthread_cond_wait(&g_svc.cond, &g_svc.lock);
  if (g_svc.out) { // a profile the helper never stopped (it died): start over in the new file
    atomic_store(&g_active, 0);
    fclose(g_svc.out);
    g_svc.out = NULL;
  }
  FILE *f = service_open(out);
  if (!f) {
    pthread_mutex_unlock(&g_svc.lock);
    return 103;
  }
  forget_methods();
  fprintf(f, "A\t%d\t%lld\n", (int)getpid(), (long long)now_ns()); // agent ready, our pid, clock
  fflush(f);
  g_depth = depth;
  if (g_code_events) {
    // Queue first, then replay what exists: an nmethod loaded in between is reported twice (the
    // helper keeps one), never missed. Before g_active, so every sample follows the replay.
    pthread_mutex_lock(&g_code_lock);
    g_code_on = 1;
    pthread_mutex_unlock(&g_code_lock);
    set_code_events(JVMTI_ENABLE);
    g_code_enabled = 1;
    (*g_jvmti)->GenerateEvents(g_jvmti, JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
    (*g_jvmti)->GenerateEvents(g_jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD);
  }
  atomic_store(&g_dropped, 0);
  atomic_store(&g_signals, 0);
  atomic_store(&g_handler_ns, 0);
  atomic_store_explicit(&g_active, 1, memory_order_release);
  service_begin(&g_svc, f);
  pthread_mutex_unlock(&g_svc.lock);
  return 0;
}

// What a stop does before the service thread ends the file: no handler records any more, no
// code or class event is queued. Also called by the service thread itself (service_orphaned).
static void profile_quiesce(void) {
  atomic_store_explicit(&g_active, 0, memory_order_release);
  // handlers are short; never wait forever on one (a stuck one would be a bug, not a reason to hang the JVM's attach listener)
  for (int i = 0; i < 20000 && atomic_load(&g_in_handler) > 0; i++) usleep(100);
  if (g_code_events) {
    pthread_mutex_lock(&g_code_lock);
    g_code_on = 0; // one already inside a callback is dropped, not queued after the end mark
    pthread_mutex_unlock(&g_code_lock);
    if (g_code_enabled) set_code_events(JVMTI_DISABLE); // a stopped agent costs nothing, per compilation either
    g_code_enabled = 0;
  }
  set_class_events(JVMTI_DISABLE); // nor per class load
}

static void do_stop(void) {
  profile_quiesce();
  service_end(&g_svc);
}

static int handle_heap(JavaVM *vm, const char *options);

static int handle(JavaVM *vm, const char *options) {
  if (options && !strncmp(options, "heap", 4)) return handle_heap(vm, options); // the heap sampler's own commands (below)
  if (options && !strncmp(options, "locks", 5)) return locks_handle(vm, options); // lock contention (locks.c)
  char opts[1024];
  snprintf(opts, sizeof(opts), "%s", options ? options : "");
  int start = 0, stop = 0, depth = 128;
  const char *out = NULL;
  char *save = NULL;
  for (char *tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (!strcmp(tok, "start")) start = 1;
    else if (!strcmp(tok, "stop")) stop = 1;
    else if (!strcmp(tok, "probe")) ;
    else if (!strncmp(tok, "out=", 4)) out = tok + 4;
    else if (!strncmp(tok, "depth=", 6)) depth = atoi(tok + 6);
    else return 104;
  }
  if (depth < 1 || depth > MAX_DEPTH || (start && (!out || out[0] != '/')) || (start && stop)) return 104;
  JNIEnv *jni = NULL;
  if ((*vm)->GetEnv(vm, (void **)&jni, JNI_VERSION_1_6) != JNI_OK) return 102;
  if (!g_initialized) {
    int rc = initialize(vm, jni);
    if (rc) return rc;
  }
  if (stop) do_stop();
  if (start) return do_start(jni, out, depth);
  return 0;
}

// ---- heap sampler: sampled allocations and which of them are still alive ----
//
// `heap,out=<path>,interval=<bytes>,depth=<n>` starts it, `heapstop` stops it; `heapprobe` only
// answers whether this JVM can sample its heap. Independent of the CPU profiler above: its own
// JVMTI environment (own capabilities and callbacks, so neither side's SetEventCallbacks replaces
// the other's), own service thread, own output file and method table. Needs no AsyncGetCallTrace
// and no signal.
//
// JVMTI's SampledObjectAlloc (JDK 11+) fires on the allocating thread for one object per
// `interval` bytes on average (HotSpot draws each gap from an exponential distribution, so an
// object of s bytes is sampled with probability 1 - exp(-s/interval); the helper weights by its
// inverse). The callback takes the Java stack with GetStackTrace (method ids and BCIs of the
// thread's own frames, safe there), the class signature, and a JNI weak global reference to the
// object, and queues them; nothing is resolved or written on the allocating thread.
//
// Liveness: a weak reference is cleared by the GC that finds its object unreachable. The
// GarbageCollectionFinish callback (inside the GC pause, where JNI and most of JVMTI are
// forbidden) only counts; the service thread notices the count moved and checks every tracked
// reference with IsSameObject(ref, NULL), reports the cleared ones (F) and the scan (G). Objects
// a young GC promoted stay "live" until a collection of the old generation finds them dead, which
// is what "survived N GCs" means for a leak. Weak references rather than tags + ObjectFree: since
// JDK 17 ObjectFree is posted lazily (when the tag map is next used), so a scan after the GC
// would not know yet; the weak reference answers at once.
//
// Idle costs nothing: on stop the events are disabled (HotSpot then stops sampling TLABs), every
// weak reference is deleted, the method table and queue are freed and the thread sleeps.
//
// File records, one a line, tab separated: H (ready: pid, clock, interval), M (a method, as for
// the CPU profiler), O (one sampled object), F (an object found collected), G (a scan after N GCs),
// T (heartbeat), E (end: counters, file closed).
// Return codes besides the shared ones (103, 104, 105): 110 JVMTI 11 unavailable (JDK < 11: no heap
// sampling); 111 the JVM refused the sampling capability.

#define HEAP_MAX_TRACKED 262144 // weak references kept; further samples are reported, not tracked
#define HEAP_MAX_QUEUED 65536   // samples waiting for the service thread; beyond that they are dropped

typedef struct heap_sample {
  struct heap_sample *next;
  int64_t ts;
  int tid;
  jlong size;
  unsigned gc; // GCs finished before the allocation
  jweak ref;
  char cls[200];
  jint nframes;
  jvmtiFrameInfo frames[]; // leaf first
} heap_sample;


typedef struct {
  jweak ref;
  long id;
} heap_tracked;

static jvmtiEnv *g_heap_jvmti;
static int g_heap_initialized;
static _Atomic int g_heap_on;      // the callback records only while set
static _Atomic int g_heap_in_cb;   // callbacks running now (stop waits for zero)
static _Atomic unsigned g_heap_gcs; // GarbageCollectionFinish count since the JVM's first heap start
static _Atomic uint64_t g_heap_samples, g_heap_dropped, g_heap_cb_ns;
static _Atomic int g_heap_queued;
static int g_heap_depth = 64;
static pthread_mutex_t g_heap_qlock = PTHREAD_MUTEX_INITIALIZER; // the queue only; never held across a JNI/JVMTI call
static heap_sample *g_heap_qhead, **g_heap_qtail = &g_heap_qhead;
static agent_service g_heap_svc = AGENT_SERVICE_INIT;
// service thread only:
static method_table g_heap_methods;
static heap_tracked *g_heap_tracked;
static long g_heap_ntracked, g_heap_next_id;

static void JNICALL on_sampled_alloc(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object, jclass klass, jlong size) {
  (void)thread;
  if (!atomic_load_explicit(&g_heap_on, memory_order_acquire)) return;
  atomic_fetch_add(&g_heap_in_cb, 1);
  int64_t entered = now_ns();
  atomic_fetch_add_explicit(&g_heap_samples, 1, memory_order_relaxed);
  heap_sample *s = NULL;
  if (atomic_load(&g_heap_on) && atomic_fetch_add(&g_heap_queued, 1) < HEAP_MAX_QUEUED)
    s = malloc(sizeof(heap_sample) + (size_t)g_heap_depth * sizeof(jvmtiFrameInfo));
  else
    atomic_fetch_sub(&g_heap_queued, 1);
  if (!s) {
    atomic_fetch_add_explicit(&g_heap_dropped, 1, memory_order_relaxed);
  } else {
    s->next = NULL;
    s->tid = (int)syscall(SYS_gettid);
    s->size = size;
    s->gc = atomic_load(&g_heap_gcs);
    if ((*jvmti)->GetStackTrace(jvmti, NULL, 0, g_heap_depth, s->frames, &s->nframes) != JVMTI_ERROR_NONE) s->nframes = 0;
    char *sig = NULL;
    if ((*jvmti)->GetClassSignature(jvmti, klass, &sig, NULL) == JVMTI_ERROR_NONE && sig) {
      snprintf(s->cls, sizeof(s->cls), "%s", sig);
      (*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
    } else {
      snprintf(s->cls, sizeof(s->cls), "?");
    }
    s->ref = (*jni)->NewWeakGlobalRef(jni, object);
    s->ts = now_ns();
    pthread_mutex_lock(&g_heap_qlock);
    *g_heap_qtail = s;
    g_heap_qtail = &s->next;
    pthread_mutex_unlock(&g_heap_qlock);
  }
  atomic_fetch_add_explicit(&g_heap_cb_ns, (uint64_t)(now_ns() - entered), memory_order_relaxed);
  atomic_fetch_sub(&g_heap_in_cb, 1);
}

// Inside the GC pause: count only (no JNI, no locks the service thread could hold across JNI).
static void JNICALL on_gc_finish(jvmtiEnv *jvmti) {
  (void)jvmti;
  atomic_fetch_add(&g_heap_gcs, 1);
}

// Writes the queued samples and starts tracking their objects (service thread, under g_heap_svc.lock).
static void heap_drain(JNIEnv *jni) {
  pthread_mutex_lock(&g_heap_qlock);
  heap_sample *list = g_heap_qhead;
  g_heap_qhead = NULL;
  g_heap_qtail = &g_heap_qhead;
  pthread_mutex_unlock(&g_heap_qlock);
  while (list) {
    heap_sample *s = list;
    list = s->next;
    atomic_fetch_sub(&g_heap_queued, 1);
    for (jint f = 0; f < s->nframes; f++) method_get(&g_heap_methods, g_heap_jvmti, jni, s->frames[f].method, g_heap_svc.out); // M lines first
    long id = 0;
    if (s->ref && g_heap_ntracked < HEAP_MAX_TRACKED && g_heap_tracked) {
      id = ++g_heap_next_id;
      g_heap_tracked[g_heap_ntracked].ref = s->ref;
      g_heap_tracked[g_heap_ntracked].id = id;
      g_heap_ntracked++;
    } else if (s->ref) {
      (*jni)->DeleteWeakGlobalRef(jni, s->ref);
    }
    clean_text(s->cls);
    // O <id, 0 = not tracked> <ts> <tid> <size> <GCs before> <class signature> then per frame "<method index>:<bci>:<line>", leaf first
    fprintf(g_heap_svc.out, "O\t%ld\t%lld\t%d\t%lld\t%u\t%s", id, (long long)s->ts, s->tid, (long long)s->size, s->gc, s->cls);
    for (jint f = 0; f < s->nframes; f++) {
      java_method *m = method_get(&g_heap_methods, g_heap_jvmti, jni, s->frames[f].method, g_heap_svc.out);
      fprintf(g_heap_svc.out, "\t%d:%lld:%d", m ? m->index : 0, (long long)s->frames[f].location, method_line(m, s->frames[f].location));
    }
    fputc('\n', g_heap_svc.out);
    free(s);
  }
}

// Which tracked objects the GCs so far have collected (service thread, under g_heap_svc.lock).
static void heap_scan(JNIEnv *jni, unsigned gcs) {
  long kept = 0;
  for (long i = 0; i < g_heap_ntracked; i++) {
    heap_tracked t = g_heap_tracked[i];
    if ((*jni)->IsSameObject(jni, t.ref, NULL)) {
      (*jni)->DeleteWeakGlobalRef(jni, t.ref);
      fprintf(g_heap_svc.out, "F\t%ld\t%u\n", t.id, gcs); // F <id> <GCs by the scan>
    } else {
      g_heap_tracked[kept++] = t;
    }
  }
  g_heap_ntracked = kept;
  fprintf(g_heap_svc.out, "G\t%u\t%lld\t%ld\n", gcs, (long long)now_ns(), kept); // G <GCs> <ts> <objects still tracked>
}

static void heap_forget(JNIEnv *jni) {
  for (long i = 0; i < g_heap_ntracked; i++) (*jni)->DeleteWeakGlobalRef(jni, g_heap_tracked[i].ref);
  g_heap_ntracked = 0;
  free(g_heap_tracked);
  g_heap_tracked = NULL;
  method_table_clear(&g_heap_methods, g_heap_jvmti);
}

static void heap_quiesce(void);

static void *heap_thread(void *arg) {
  (void)arg;
  JNIEnv *jni = service_attach(g_vm, "ebpf-studio-hp", "ebpf-studio-heap");
  if (!jni) return NULL;
  unsigned scanned = 0;
  int64_t last_beat = 0;
  pthread_mutex_lock(&g_heap_svc.lock);
  for (;;) {
    while (!g_heap_svc.out) {
      pthread_cond_wait(&g_heap_svc.cond, &g_heap_svc.lock); // idle between sessions
      scanned = atomic_load(&g_heap_gcs);
    }
    heap_drain(jni);
    unsigned gcs = atomic_load(&g_heap_gcs);
    if (gcs != scanned) {
      heap_scan(jni, gcs);
      scanned = gcs;
    }
    if (service_orphaned(&g_heap_svc)) {
      heap_quiesce(); // the reader is gone or the file full: end as a stop would
      g_heap_svc.stop_wanted = 1;
    }
    if (g_heap_svc.stop_wanted) {
      // the caller has disabled the events and waited for callbacks: empty the queue, let go of every object
      heap_drain(jni);
      heap_forget(jni);
      fprintf(g_heap_svc.out, "E\t%llu\t%llu\t%llu\t%u\n", (unsigned long long)atomic_load(&g_heap_samples), (unsigned long long)atomic_load(&g_heap_dropped), (unsigned long long)atomic_load(&g_heap_cb_ns), atomic_load(&g_heap_gcs));
      if (g_heap_svc.orphaned == SERVICE_READER_GONE) service_discard(&g_heap_svc);
      service_ended(&g_heap_svc);
      continue;
    }
    int64_t now = now_ns();
    if (now - last_beat >= 200000000LL) {
      fprintf(g_heap_svc.out, "T\t%lld\t%u\n", (long long)now, gcs); // T <ts> <GCs>
      last_beat = now;
    }
    fflush(g_heap_svc.out);
    service_sleep(&g_heap_svc, 50 * 1000000LL);
  }
  return NULL;
}

static int heap_initialize(JavaVM *vm) {
  jvmtiEnv *jv = NULL;
  if ((*vm)->GetEnv(vm, (void **)&jv, JVMTI_VERSION_11) != JNI_OK || !jv) return 110;
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof(caps));
  caps.can_generate_sampled_object_alloc_events = 1;
  caps.can_generate_garbage_collection_events = 1;
  if ((*jv)->AddCapabilities(jv, &caps) != JVMTI_ERROR_NONE) {
    (*jv)->DisposeEnvironment(jv);
    return 111;
  }
  method_capabilities(jv);
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof(cb));
  cb.SampledObjectAlloc = on_sampled_alloc;
  cb.GarbageCollectionFinish = on_gc_finish;
  (*jv)->SetEventCallbacks(jv, &cb, sizeof(cb));
  g_vm = vm;
  g_heap_jvmti = jv;
  service_spawn(heap_thread);
  g_heap_initialized = 1;
  return 0;
}

static void heap_set_events(jvmtiEventMode mode) {
  (*g_heap_jvmti)->SetEventNotificationMode(g_heap_jvmti, mode, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, NULL);
  (*g_heap_jvmti)->SetEventNotificationMode(g_heap_jvmti, mode, JVMTI_EVENT_GARBAGE_COLLECTION_FINISH, NULL);
}

// What a stop does before the service thread ends the file: no callback records any more. Also
// called by the service thread itself (service_orphaned).
static void heap_quiesce(void) {
  atomic_store_explicit(&g_heap_on, 0, memory_order_release);
  heap_set_events(JVMTI_DISABLE);
  for (int i = 0; i < 20000 && atomic_load(&g_heap_in_cb) > 0; i++) usleep(100);
}

static void heap_stop(void) {
  heap_quiesce();
  service_end(&g_heap_svc);
}

static int heap_start(const char *out, jlong interval, int depth) {
  heap_stop(); // a session the helper never stopped (it died): end it, start over in the new file
  pthread_mutex_lock(&g_heap_svc.lock);
  FILE *f = service_open(out);
  if (!f) {
    pthread_mutex_unlock(&g_heap_svc.lock);
    return 103;
  }
  g_heap_tracked = calloc(HEAP_MAX_TRACKED, sizeof(heap_tracked));
  if (!g_heap_tracked) {
    fclose(f);
    pthread_mutex_unlock(&g_heap_svc.lock);
    return 105;
  }
  g_heap_next_id = 0;
  g_heap_depth = depth;
  atomic_store(&g_heap_samples, 0);
  atomic_store(&g_heap_dropped, 0);
  atomic_store(&g_heap_cb_ns, 0);
  fprintf(f, "H\t%d\t%lld\t%lld\t%u\n", (int)getpid(), (long long)now_ns(), (long long)interval, atomic_load(&g_heap_gcs)); // H <pid> <clock> <interval> <GCs>
  fflush(f);
  (*g_heap_jvmti)->SetHeapSamplingInterval(g_heap_jvmti, (jint)interval);
  atomic_store_explicit(&g_heap_on, 1, memory_order_release);
  heap_set_events(JVMTI_ENABLE);
  service_begin(&g_heap_svc, f);
  pthread_mutex_unlock(&g_heap_svc.lock);
  return 0;
}

static int handle_heap(JavaVM *vm, const char *options) {
  char opts[1024];
  snprintf(opts, sizeof(opts), "%s", options);
  int start = 0, stop = 0, depth = 64;
  long long interval = 512 * 1024;
  const char *out = NULL;
  char *save = NULL;
  for (char *tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (!strcmp(tok, "heap")) start = 1;
    else if (!strcmp(tok, "heapstop")) stop = 1;
    else if (!strcmp(tok, "heapprobe")) ;
    else if (!strncmp(tok, "out=", 4)) out = tok + 4;
    else if (!strncmp(tok, "interval=", 9)) interval = atoll(tok + 9);
    else if (!strncmp(tok, "depth=", 6)) depth = atoi(tok + 6);
    else return 104;
  }
  if (depth < 1 || depth > MAX_DEPTH || interval < 1 || interval > INT_MAX || (start && (!out || out[0] != '/')) || (start && stop)) return 104;
  if (!g_heap_initialized) {
    if (stop) return 0; // nothing ever started
    int rc = heap_initialize(vm);
    if (rc) return rc;
  }
  if (stop) heap_stop();
  if (start) return heap_start(out, (jlong)interval, depth);
  return 0;
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  return handle(vm, options);
}

// For -agentpath:<lib>=start,out=... at JVM start (tests); the live phase is reached later, so
// only the SIGPROF handler and AGCT are set up when VMInit arrives is not needed: JVMTI calls
// used by initialize() work in the live phase, which a started agent reaches through VMInit.
static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread) {
  (void)jvmti, (void)thread;
  static char saved[1024];
  char *opts = getenv("EBPF_STUDIO_JVMAGENT_OPTIONS");
  snprintf(saved, sizeof(saved), "%s", opts ? opts : "probe");
  JavaVM *vm = NULL;
  (*jni)->GetJavaVM(jni, &vm);
  handle(vm, saved);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
  (void)reserved;
  jvmtiEnv *boot = NULL;
  if ((*vm)->GetEnv(vm, (void **)&boot, JVMTI_VERSION_1_2) != JNI_OK) return 1;
  if (options && *options) setenv("EBPF_STUDIO_JVMAGENT_OPTIONS", options, 1);
  jvmtiEventCallbacks cb;
  memset(&cb, 0, sizeof(cb));
  cb.VMInit = on_vm_init;
  (*boot)->SetEventCallbacks(boot, &cb, sizeof(cb));
  (*boot)->SetEventNotificationMode(boot, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL);
  return 0;
}
