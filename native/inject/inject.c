/* ebpf-studio-inject: loads the leak interposer into a running process and starts or stops it,
 * by making one of the process's threads call functions through ptrace.
 *
 *   ebpf-studio-inject start PID UID GID START LIBRARY CONFIG
 *       dlopen(LIBRARY) in PID, then ebpf_studio_inject_start(CONFIG) (it rewrites the GOT
 *       entries of the malloc family to its wrappers)
 *   ebpf-studio-inject stop PID UID GID START LIBRARY
 *       ebpf_studio_inject_stop(): the entries go back
 *   ebpf-studio-inject filters PID UID GID START
 *       as root: every thread's seccomp filters, for the caller to tell whether they allow
 *       the system calls the injected code makes (print_filters)
 *
 * UID and GID are the ids the caller found the process running with, START its start time
 * (field 22 of /proc/PID/stat). LIBRARY and CONFIG are paths as the process sees them, inside its
 * own root (a container's files, which the caller placed there); /proc/PID/maps shows its modules
 * the same way.
 *
 * Whose rights: what the caller read about the process is already old when we attach (it may
 * have exec'd a setuid program since, or be a daemon with one thread switched to a user and
 * another still root). So this program attaches by what the kernel checks at PTRACE_SEIZE: it
 * drops to the process's owner (uid, gid and groups) first, and the kernel then refuses any
 * thread with other ids, any capability, or a non-dumpable process, and ignores setuid bits on
 * an exec by the traced thread. Where Yama forbids a non-root tracer to attach to a non-child
 * (ptrace_scope >= 1) it stays root and says so. Either way, once a thread is seized and before
 * anything runs in it, every thread's ids, capabilities, dumpability and the start time are
 * checked again; an exec while attached ends the attach without touching the new program.
 *
 * Prints one line "ok <result>" and exits 0, or a reason on stderr and exits 1 (2: bad usage).
 *
 * Why one thread and not all of them: the called code (dlopen, our setup) takes locks — the
 * loader's, and malloc's arena locks through its own allocations. A thread stopped while it holds
 * one of them would deadlock the call if every thread were held, so the others keep running and
 * only one is borrowed. The borrowed thread itself must hold none of them: it is taken only when
 * it was interrupted outside the C library and the dynamic loader (in the program's own code), or
 * inside a blocking system call that malloc never makes (sleeps, poll/epoll, reads, waits), also
 * when a stop made the kernel continue it as restart_syscall (see restarted_blocking).
 * Otherwise it is let go for a moment and another thread, or the same one later, is tried.
 *
 * What the borrowed thread sees: its registers (general, and the whole x87/SSE/AVX state) are
 * saved and restored, the call runs on its stack well below the red zone, and returns to address
 * 0, where the SIGSEGV it takes is a ptrace stop that is never delivered. A system call it was
 * interrupted in restarts as after any signal. Nothing here ever kills the target: no
 * PTRACE_O_EXITKILL, and every exit path detaches. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <grp.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

static pid_t target;
/* the ids and start time the caller found the process with (see the header) */
static uid_t want_uid;
static gid_t want_gid;
static unsigned long long want_start;
static bool stayed_root; /* Yama, or another owner's user namespace: attached as root, protected by the checks alone */
static bool same_userns;  /* the target is in our user namespace */
static uid_t target_ns_owner; /* else the uid that made its namespace */
/* why borrowing attempts failed, for the message when none succeeds */
static unsigned tries_signal, tries_failed;

static void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "ebpf-studio-inject: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- whose process ----------------------------------------------------------------------- */

/* A small /proc file, whole (NUL-terminated), or false. */
static bool read_small(const char *file, char *buf, size_t size)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t n = 0;
	ssize_t r;
	while (n < size - 1 && (r = read(fd, buf + n, size - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	return n > 0;
}

/* The rest of the line after "Name:" in a status text, or NULL. */
static const char *status_field(const char *text, const char *name)
{
	size_t l = strlen(name);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, name, l) == 0 && p[l] == ':')
			return p + l + 1;
	return NULL;
}

/* Whether all four ids of a Uid:/Gid: line (real, effective, saved, filesystem) equal want. */
static bool ids_are(const char *line, unsigned long want)
{
	char *end;
	for (int i = 0; i < 4; i++) {
		if (!line)
			return false;
		unsigned long v = strtoul(line, &end, 10);
		if (end == line || v != want)
			return false;
		line = end;
	}
	return true;
}

/* The four ids of a Uid:/Gid: line as "r/e/s/fs", for messages. */
static const char *id_list(const char *line, char *out, size_t size)
{
	unsigned long v[4] = { 0 };
	char *end;
	for (int i = 0; i < 4 && line; i++, line = end)
		v[i] = strtoul(line, &end, 10);
	snprintf(out, size, "%lu/%lu/%lu/%lu", v[0], v[1], v[2], v[3]);
	return out;
}

/* The process's start time (field 22 of /proc/PID/stat, clock ticks since boot), 0 if gone. */
static unsigned long long start_time(pid_t pid)
{
	char file[64], buf[1024];
	snprintf(file, sizeof file, "/proc/%d/stat", pid);
	if (!read_small(file, buf, sizeof buf))
		return 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* Why thread tid of the target must not run our code, or NULL. */
static const char *thread_refusal(pid_t tid, char *why, size_t size)
{
	char file[96], text[4096];
	snprintf(file, sizeof file, "/proc/%d/task/%d/status", target, tid);
	if (!read_small(file, text, sizeof text))
		return errno == ENOENT || errno == ESRCH ? NULL : (snprintf(why, size, "thread %d cannot be read (%s)", tid, strerror(errno)), why);
	const char *uid = status_field(text, "Uid"), *gid = status_field(text, "Gid"), *cap = status_field(text, "CapPrm");
	if (!ids_are(uid, want_uid) || !ids_are(gid, want_gid)) {
		char u[64], g[64];
		snprintf(why, size, "thread %d runs with uids %s and gids %s, not all %u and %u (a setuid or setgid program, or a thread that changed its ids)", tid, id_list(uid, u, sizeof u), id_list(gid, g, sizeof g), (unsigned)want_uid, (unsigned)want_gid);
		return why;
	}
	/* capabilities count where they act: in our user namespace (a process in one of its own holds
	 * them there only) */
	if (want_uid != 0 && same_userns && (!cap || strtoull(cap, NULL, 16) != 0)) {
		snprintf(why, size, "thread %d holds capabilities (CapPrm%.*s)", tid, cap ? (int)strcspn(cap, "\n") : 0, cap ? cap : "");
		return why;
	}
	/* a process that is not dumpable (it gave up root, or says so itself) shows its /proc files as root's */
	struct stat st;
	snprintf(file, sizeof file, "/proc/%d/task/%d", target, tid);
	if (want_uid != 0 && stat(file, &st) == 0 && st.st_uid != want_uid) {
		snprintf(why, size, "thread %d is not dumpable (its /proc files belong to uid %u)", tid, (unsigned)st.st_uid);
		return why;
	}
	return NULL;
}

/* Why the target is not (any more) the process the caller asked for, or NULL: its start time,
 * and every thread's ids, capabilities and dumpability; `seized`, when not 0, must be one of its
 * threads. */
static const char *process_refusal(pid_t seized)
{
	static char why[512];
	unsigned long long now = start_time(target);
	if (now != want_start) {
		snprintf(why, sizeof why, now ? "its start time is %llu, not %llu: it exited and the pid now names another process" : "it exited", now, want_start);
		return why;
	}
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/task", target);
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(why, sizeof why, "its threads cannot be listed (%s)", strerror(errno));
		return why;
	}
	const char *refused = NULL;
	bool seen = seized == 0;
	unsigned threads = 0;
	struct dirent *e;
	while (!refused && (e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid <= 0)
			continue;
		threads++;
		seen |= tid == seized;
		refused = thread_refusal(tid, why, sizeof why);
	}
	closedir(d);
	if (!refused && !threads)
		refused = "it has no threads left";
	if (!refused && !seen) {
		snprintf(why, sizeof why, "the attached thread %d is not one of its threads", seized);
		refused = why;
	}
	return refused;
}

static void refuse(const char *why) __attribute__((noreturn));
static void refuse(const char *why)
{
	die(1, "refusing process %d: %s", target, why);
	exit(1);
}

/* The groups of the target's main thread (its Groups: line), for the drop; *n of them. */
static gid_t *target_groups(size_t *n)
{
	static char text[64 * 1024];
	char file[64];
	snprintf(file, sizeof file, "/proc/%d/status", target);
	if (!read_small(file, text, sizeof text))
		refuse("its status cannot be read");
	const char *g = status_field(text, "Groups");
	size_t cap = 16;
	gid_t *out = malloc(cap * sizeof *out);
	*n = 0;
	char *end;
	while (g && out) {
		unsigned long v = strtoul(g, &end, 10);
		if (end == g)
			break;
		if (*n == cap)
			out = realloc(out, (cap *= 2) * sizeof *out);
		if (out)
			out[(*n)++] = (gid_t)v;
		g = end;
	}
	if (!out)
		die(1, "out of memory");
	return out;
}

/* Whether the target is in our user namespace; else *owner is the uid that made its namespace
 * (-1 if unknown). A tracer with the owner's uid may attach in a namespace that uid made; in one
 * that root made (a container runtime's), only root may. */
static bool in_our_userns(uid_t *owner)
{
	char file[64];
	struct stat ours, theirs;
	snprintf(file, sizeof file, "/proc/%d/ns/user", target);
	*owner = (uid_t)-1;
	if (stat("/proc/self/ns/user", &ours) != 0 || stat(file, &theirs) != 0)
		return true; /* no namespaces here */
	if (ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino)
		return true;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && ioctl(fd, NS_GET_OWNER_UID, owner) != 0)
		*owner = (uid_t)-1;
	if (fd >= 0)
		close(fd);
	return false;
}

static int yama_scope(void)
{
	char buf[16];
	return read_small("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof buf) ? atoi(buf) : 0;
}

/* Becomes the process's owner (groups, gid, uid: all of them, for good) so the kernel checks our
 * attach as that user's; or, where Yama forbids that user to attach to a process it did not
 * start, stays root and relies on the checks after the attach. */
static void become_owner(void)
{
	int scope = yama_scope();
	if (scope >= 1 && want_uid != 0) {
		stayed_root = true;
		fprintf(stderr, "ebpf-studio-inject: Yama ptrace_scope is %d: attaching to process %d as root (a non-root tracer may not attach to a process it did not start), with every thread's ids, capabilities and the start time checked after the attach\n", scope, target);
		return;
	}
	if (!same_userns && want_uid != 0 && target_ns_owner != want_uid) {
		stayed_root = true;
		fprintf(stderr, "ebpf-studio-inject: process %d runs in a user namespace made by uid %d: attaching as root (uid %u could not), with every thread's ids and the start time checked after the attach\n", target, (int)target_ns_owner, (unsigned)want_uid);
		return;
	}
	size_t n;
	gid_t *groups = target_groups(&n);
	if (setgroups(n, groups) != 0 || setresgid(want_gid, want_gid, want_gid) != 0 || setresuid(want_uid, want_uid, want_uid) != 0)
		die(1, "cannot become uid %u gid %u to attach to process %d: %s", (unsigned)want_uid, (unsigned)want_gid, target, strerror(errno));
	free(groups);
	uid_t r, e, s;
	gid_t gr, ge, gs;
	if (getresuid(&r, &e, &s) != 0 || getresgid(&gr, &ge, &gs) != 0 || r != want_uid || e != want_uid || s != want_uid || gr != want_gid || ge != want_gid || gs != want_gid)
		die(1, "the drop to uid %u gid %u did not take", (unsigned)want_uid, (unsigned)want_gid);
	/* the owner must not be able to take over this process now that it runs as them */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* ---- the target's modules ---------------------------------------------------------------- */

struct mapping {
	uint64_t start, end, offset;
	char perms[5];
	char path[512];
};

/* Calls fn for each line of /proc/PID/maps that names a file; stops when fn returns true. */
static bool each_mapping(bool (*fn)(const struct mapping *, void *), void *arg)
{
	char file[64], line[1024];
	snprintf(file, sizeof file, "/proc/%d/maps", target);
	FILE *f = fopen(file, "re");
	if (!f && errno == EACCES)
		refuse("its owner may not read its memory map (it runs a setuid program, holds capabilities, or is not dumpable)");
	if (!f)
		die(1, "cannot read %s: %s", file, strerror(errno));
	bool stopped = false;
	while (!stopped && fgets(line, sizeof line, f)) {
		struct mapping m = { 0 };
		int at = 0;
		if (sscanf(line, "%lx-%lx %4s %lx %*s %*s %n", &m.start, &m.end, m.perms, &m.offset, &at) < 4 || at == 0)
			continue;
		char *p = line + at;
		p[strcspn(p, "\n")] = 0;
		if (*p != '/')
			continue;
		snprintf(m.path, sizeof m.path, "%s", p);
		stopped = fn(&m, arg);
	}
	fclose(f);
	return stopped;
}

struct find_module {
	const char *suffix; /* a path ending, e.g. "/libc.so.6" */
	bool exact;
	struct mapping first; /* the mapping at file offset 0: its start is the load bias for DSOs */
	uint64_t text_lo, text_hi;
	bool found;
};

static bool find_module_fn(const struct mapping *m, void *arg)
{
	struct find_module *fm = arg;
	size_t pl = strlen(m->path), sl = strlen(fm->suffix);
	bool match = fm->exact ? strcmp(m->path, fm->suffix) == 0 : (pl >= sl && strcmp(m->path + pl - sl, fm->suffix) == 0);
	if (!match)
		return false;
	if (!fm->found && m->offset == 0) {
		fm->first = *m;
		fm->found = true;
	}
	if (fm->found && strcmp(m->path, fm->first.path) == 0 && m->perms[2] == 'x') {
		if (!fm->text_lo || m->start < fm->text_lo)
			fm->text_lo = m->start;
		if (m->end > fm->text_hi)
			fm->text_hi = m->end;
	}
	return false;
}

static struct find_module find_module(const char *suffix, bool exact)
{
	struct find_module fm = { .suffix = suffix, .exact = exact };
	each_mapping(find_module_fn, &fm);
	return fm;
}

/* A defined function symbol's value in an ELF file's .dynsym, or 0. The file is read through
 * /proc/PID/map_files, so it is the very file the target mapped, where that can be opened (it
 * needs CAP_SYS_ADMIN: only when we stayed root); otherwise, as the process's owner, by its path
 * inside the target's root: a process in a container maps its own libc, not the host's file of
 * the same name. */
static uint64_t dynsym_value(const struct mapping *m, const char *name)
{
	char file[640];
	snprintf(file, sizeof file, "/proc/%d/map_files/%lx-%lx", target, m->start, m->end);
	int fd = stayed_root ? open(file, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0) {
		snprintf(file, sizeof file, "/proc/%d/root%s", target, m->path);
		fd = open(file, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return 0;
	struct stat st;
	uint64_t value = 0;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return 0;
	}
	const uint8_t *img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (img == MAP_FAILED)
		return 0;
	size_t size = (size_t)st.st_size;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0 || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size)
		goto out;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		const Elf64_Shdr *strs = &sh[sh[i].sh_link];
		if (sh[i].sh_offset + sh[i].sh_size > size || strs->sh_offset + strs->sh_size > size)
			goto out;
		const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
		size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
		for (size_t k = 0; k < n; k++) {
			if (sym[k].st_name >= strs->sh_size || sym[k].st_shndx == SHN_UNDEF || sym[k].st_value == 0 || ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC)
				continue;
			if (strcmp((const char *)img + strs->sh_offset + sym[k].st_name, name) == 0) {
				value = sym[k].st_value;
				goto out;
			}
		}
	}
out:
	munmap((void *)img, size);
	return value;
}

/* ---- borrowing a thread ------------------------------------------------------------------ */

struct ranges {
	uint64_t lo[2], hi[2];
};

/* System calls malloc never makes, in which a thread holds none of its locks. */
static bool blocking_syscall(long nr)
{
	switch (nr) {
	case 0:	  /* read */
	case 7:	  /* poll */
	case 23:  /* select */
	case 34:  /* pause */
	case 35:  /* nanosleep */
	case 43:  /* accept */
	case 45:  /* recvfrom */
	case 47:  /* recvmsg */
	case 61:  /* wait4 */
	case 128: /* rt_sigtimedwait */
	case 130: /* rt_sigsuspend */
	case 230: /* clock_nanosleep */
	case 232: /* epoll_wait */
	case 270: /* pselect6 */
	case 271: /* ppoll */
	case 281: /* epoll_pwait */
	case 288: /* accept4 */
		return true;
	default:
		return false;
	}
}

/* Why a thread was not at a safe point, by kind (see unsafe_why), with how often: the message
 * when none is says what the threads were doing. */
#define WHY_LIBRARY (-2L)	/* running in the C library or the loader, and it did not come out */
#define WHY_RESTART_FUTEX (-3L)	/* restart_syscall of a futex wait with a timeout */
#define WHY_RESTART_UNKNOWN (-4L) /* restart_syscall of a call that could not be told */
static struct { long why; unsigned n; } unsafe_tally[8];

static void count_unsafe(long why)
{
	for (size_t i = 0; i < sizeof unsafe_tally / sizeof unsafe_tally[0]; i++) {
		if (unsafe_tally[i].n == 0)
			unsafe_tally[i].why = why;
		if (unsafe_tally[i].why == why) {
			unsafe_tally[i].n++;
			return;
		}
	}
}

/* The tally as "N times inside the C library or the loader, M times in system call 202 (futex)...". */
static const char *unsafe_why(void)
{
	static char out[1024];
	size_t at = 0;
	out[0] = 0;
	for (size_t i = 0; i < sizeof unsafe_tally / sizeof unsafe_tally[0] && unsafe_tally[i].n && at < sizeof out; i++) {
		long w = unsafe_tally[i].why;
		char what[160];
		if (w == WHY_LIBRARY)
			snprintf(what, sizeof what, "inside the C library or the loader");
		else if (w == WHY_RESTART_FUTEX)
			snprintf(what, sizeof what, "in restart_syscall continuing a futex wait (a lock or condition, not a blocking call it can be borrowed in)");
		else if (w == WHY_RESTART_UNKNOWN)
			snprintf(what, sizeof what, "in restart_syscall continuing a call that could not be told (its kernel wait channel was unreadable or it moved meanwhile)");
		else
			snprintf(what, sizeof what, "in system call %ld%s, not a blocking call it can be borrowed in", w, w == 202 ? " (futex: a lock or condition)" : "");
		at += (size_t)snprintf(out + at, sizeof out - at, "%s%u times %s", at ? ", " : "", unsafe_tally[i].n, what);
	}
	return at ? out : "0 times at an unsafe point";
}

/* What a thread was blocked in just before it was stopped: how many times it had given up the CPU
 * (voluntary context switches, -1 unknown) and the kernel function it waits in (its wait channel). */
struct blocked_in {
	long switches;
	char wchan[128];
};

static long voluntary_switches(pid_t tid)
{
	static char text[64 * 1024]; /* a long Groups: line comes before it */
	char file[96];
	snprintf(file, sizeof file, "/proc/%d/task/%d/status", target, tid);
	if (!read_small(file, text, sizeof text))
		return -1;
	const char *v = status_field(text, "voluntary_ctxt_switches");
	return v ? strtol(v, NULL, 10) : -1;
}

/* Samples tid (seized, still running or blocked) before it is interrupted; the switch count is
 * kept only when it did not change while the wait channel was read. */
static void sample_blocked(pid_t tid, struct blocked_in *s)
{
	char file[96];
	long before = voluntary_switches(tid);
	snprintf(file, sizeof file, "/proc/%d/task/%d/wchan", target, tid);
	if (!read_small(file, s->wchan, sizeof s->wchan))
		s->wchan[0] = 0;
	s->switches = before >= 0 && voluntary_switches(tid) == before ? before : -1;
}

/* A thread stopped in restart_syscall (219): the kernel continues a call that a stop interrupted
 * (ours, an earlier attach's, a debugger's, SIGSTOP/SIGCONT) and whose remaining time it kept. On
 * x86-64 that call is one of: a sleep (nanosleep, clock_nanosleep on any clock), poll, or a futex
 * wait with a timeout. The first two are blocking calls of the list; a futex wait is not. The
 * registers cannot tell them apart (the number is gone, the arguments overlap), so the kernel's
 * wait channel read just before the stop does: a futex wait's is a futex function on every kernel
 * (futex_wait_queue_me, futex_wait_queue, futex_do_wait), a sleep's or poll's never is. It counts
 * only when the thread went from that wait straight into our stop: exactly one voluntary switch
 * (the stop's own) since it was read. False with *why (a WHY_ code) when not safe. */
static bool restarted_blocking(pid_t tid, const struct blocked_in *s, long *why)
{
	*why = WHY_RESTART_UNKNOWN;
	if (s->switches < 0 || !s->wchan[0] || strcmp(s->wchan, "0") == 0 || voluntary_switches(tid) != s->switches + 1)
		return false;
	*why = WHY_RESTART_FUTEX;
	return !strstr(s->wchan, "futex");
}

static bool in_ranges(const struct ranges *r, uint64_t ip)
{
	for (int i = 0; i < 2; i++)
		if (ip >= r->lo[i] && ip < r->hi[i])
			return true;
	return false;
}

/* Waits for tid's next stop; false when it exited. */
static bool wait_stop(pid_t tid, int *status)
{
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL);
		if (r == tid)
			return WIFSTOPPED(*status);
		if (r < 0 && errno != EINTR)
			return false;
	}
}

/* Waits up to ms for tid's next stop; past that interrupts it (a blocking system call) and waits
 * for that stop. False when the thread exited. */
static bool wait_stop_timed(pid_t tid, int *status, uint64_t ms)
{
	uint64_t until = now_ms() + ms;
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		if (r == tid)
			return WIFSTOPPED(*status);
		if (r < 0 && errno != EINTR)
			return false;
		if (now_ms() > until) {
			ptrace(PTRACE_INTERRUPT, tid, 0, 0);
			return wait_stop(tid, status);
		}
		struct timespec ts = { 0, 50 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* The thread exec'd a new program while attached (its image and maybe its ids are new): let it
 * go untouched (no register of the old program is put back into it), and stop. */
static void exec_seen(pid_t tid) __attribute__((noreturn));
static void exec_seen(pid_t tid)
{
	ptrace(PTRACE_DETACH, tid, 0, 0);
	refuse("it started another program (exec) while being attached to");
}

/* Detaches a thread that was being single-stepped and is now stopped for something else (our
 * interrupt after a step that took too long, or a signal for the program). Its step may have
 * trapped meanwhile: that SIGTRAP is then still queued, and a plain detach would deliver it to
 * the program, whose default action is to die. So the queued signals are let come as stops first
 * (each is reported before the thread gets back to user space, and the step's trap, a fault,
 * comes before the others): the program's own are delivered, the step's trap is dropped. */
static void detach_stepped(pid_t tid, int status)
{
	for (int k = 0; k < 16; k++) {
		int sig = WSTOPSIG(status);
		if ((status >> 16) != 0 || sig == SIGTRAP)
			sig = 0; /* our interrupt's stop, or the step's trap */
		struct __ptrace_peeksiginfo_args q = { .off = 0, .flags = 0, .nr = 8 };
		siginfo_t queued[8];
		long n = ptrace(PTRACE_PEEKSIGINFO, tid, &q, queued);
		bool trap = false;
		for (long i = 0; i < n; i++)
			trap |= queued[i].si_signo == SIGTRAP;
		if (!trap)
			break;
		if (ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig) != 0 || !wait_stop(tid, &status))
			return;
	}
	int sig = WSTOPSIG(status);
	ptrace(PTRACE_DETACH, tid, 0, (void *)(long)((status >> 16) != 0 || sig == SIGTRAP ? 0 : sig));
}

/* A thread stopped inside the C library or the loader (malloc, free, ...): single-steps it until
 * it is back in the program's own code, where it holds none of their locks. Gives up on a signal
 * (its handler would run on top of the library's frame), a system call that blocks, or a long
 * stretch of library code. */
static bool step_out(pid_t tid, const struct ranges *unsafe, struct user_regs_struct *regs)
{
	for (int steps = 0; steps < 200000; steps++) {
		if (!in_ranges(unsafe, regs->rip))
			return true;
		int status;
		if (ptrace(PTRACE_SINGLESTEP, tid, 0, 0) != 0 || !wait_stop_timed(tid, &status, 20))
			return false;
		if ((status >> 16) == PTRACE_EVENT_EXEC)
			exec_seen(tid);
		if (WSTOPSIG(status) != SIGTRAP || (status >> 16) != 0) {
			/* a signal for the program, or our interrupt of a blocking call: not here */
			detach_stepped(tid, status);
			return false;
		}
		if (ptrace(PTRACE_GETREGS, tid, 0, regs) != 0)
			return false;
	}
	return false;
}

struct borrowed {
	pid_t tid;
	struct user_regs_struct regs;
	uint8_t *xstate;
	size_t xstate_len;
};

/* Tries to take tid: true with its state saved when it is at a safe point, else it runs on. */
static bool try_borrow(pid_t tid, const struct ranges *unsafe, struct borrowed *b)
{
	int status;
	/* an exec while attached is reported as a stop of its own (exec_seen) */
	if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)PTRACE_O_TRACEEXEC) != 0) {
		tries_failed++;
		if (errno == EPERM && !stayed_root) {
			/* the kernel's answer for the owner: say which rule, where we can tell */
			const char *why = process_refusal(0);
			refuse(why ? why : "the kernel does not let its owner attach to it (it holds capabilities, is not dumpable, or is traced by another tracer)");
		}
		return false;
	}
	struct blocked_in blocked;
	sample_blocked(tid, &blocked);
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 || !wait_stop(tid, &status)) {
		tries_failed++;
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return false;
	}
	if ((status >> 16) == PTRACE_EVENT_EXEC)
		exec_seen(tid);
	/* A signal that was about to be delivered (not our interrupt's stop): let it be delivered and
	 * try again another time. */
	if (WSTOPSIG(status) != SIGTRAP || (status >> 16) != PTRACE_EVENT_STOP) {
		tries_signal++;
		ptrace(PTRACE_DETACH, tid, 0, (void *)(long)WSTOPSIG(status));
		return false;
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &b->regs) != 0) {
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return false;
	}
	long nr = (long)b->regs.orig_rax, why = nr;
	bool safe;
	if (nr < 0) { /* not in a system call */
		safe = step_out(tid, unsafe, &b->regs);
		why = WHY_LIBRARY;
	} else if (nr == 219) /* restart_syscall */
		safe = restarted_blocking(tid, &blocked, &why);
	else
		safe = blocking_syscall(nr);
	if (!safe) {
		count_unsafe(why);
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return false;
	}
	static uint8_t xs[64 * 1024] __attribute__((aligned(64)));
	struct iovec iov = { xs, sizeof xs };
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) != 0) {
		/* no XSAVE: the FXSAVE area (x87 and SSE) */
		iov.iov_len = sizeof(struct user_fpregs_struct);
		if (ptrace(PTRACE_GETFPREGS, tid, 0, xs) != 0) {
			ptrace(PTRACE_DETACH, tid, 0, 0);
			return false;
		}
		b->xstate_len = 0;
	} else {
		b->xstate_len = iov.iov_len;
	}
	b->xstate = xs;
	b->tid = tid;
	return true;
}

static void give_back(struct borrowed *b)
{
	ptrace(PTRACE_SETREGS, b->tid, 0, &b->regs);
	if (b->xstate_len) {
		struct iovec iov = { b->xstate, b->xstate_len };
		ptrace(PTRACE_SETREGSET, b->tid, (void *)NT_X86_XSTATE, &iov);
	} else {
		ptrace(PTRACE_SETFPREGS, b->tid, 0, b->xstate);
	}
	ptrace(PTRACE_DETACH, b->tid, 0, 0);
}

/* Calls visit(tid, arg) for each thread of the target until one returns true, and returns that
 * thread, or 0 when none did; exits when the target's threads cannot be listed (it is gone). */
static pid_t each_thread(bool (*visit)(pid_t tid, void *arg), void *arg)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/task", target);
	DIR *d = opendir(dir);
	if (!d)
		die(1, "process %d is gone", target);
	pid_t found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid > 0 && visit(tid, arg))
			found = tid;
	}
	closedir(d);
	return found;
}

struct borrow_try {
	const struct ranges *unsafe;
	struct borrowed *b;
};

static bool borrow_visit(pid_t tid, void *arg)
{
	struct borrow_try *t = arg;
	return try_borrow(tid, t->unsafe, t->b);
}

/* Borrows a thread of the target at a safe point, trying every thread for up to timeout_ms. */
static bool borrow(const struct ranges *unsafe, struct borrowed *b, uint64_t timeout_ms)
{
	struct borrow_try t = { unsafe, b };
	uint64_t until = now_ms() + timeout_ms;
	do {
		if (each_thread(borrow_visit, &t))
			return true;
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	} while (now_ms() < until);
	return false;
}

static bool poke(pid_t tid, uint64_t addr, const void *data, size_t len)
{
	/* word by word, so no write permission of /proc/PID/mem is assumed */
	for (size_t i = 0; i < len; i += 8) {
		uint64_t word = 0;
		if (len - i < 8) {
			errno = 0;
			word = (uint64_t)ptrace(PTRACE_PEEKDATA, tid, (void *)(addr + i), 0);
			if (errno)
				return false;
		}
		memcpy(&word, (const char *)data + i, len - i < 8 ? len - i : 8);
		if (ptrace(PTRACE_POKEDATA, tid, (void *)(addr + i), (void *)word) != 0)
			return false;
	}
	return true;
}

/* Calls fn(arg0 = a copy of str on the stack or num, arg1) in the borrowed thread; the function's
 * return value, or -1 with *failed set when the call could not complete. */
static uint64_t call(struct borrowed *b, uint64_t fn, const char *str, uint64_t arg1, bool *failed, uint64_t timeout_ms)
{
	struct user_regs_struct r = b->regs;
	uint64_t sp = (b->regs.rsp - 1024) & ~(uint64_t)15; /* far below the red zone */
	uint64_t arg0 = 0;
	*failed = true;
	if (str) {
		size_t len = strlen(str) + 1;
		sp -= (len + 15) & ~(size_t)15;
		if (!poke(b->tid, sp, str, len))
			return (uint64_t)-1;
		arg0 = sp;
	}
	/* the return address: 0, so the return faults into a stop we catch */
	uint64_t zero = 0;
	sp -= 8;
	if (!poke(b->tid, sp, &zero, 8))
		return (uint64_t)-1;
	r.rsp = sp;
	r.rip = fn;
	r.rdi = arg0;
	r.rsi = arg1;
	r.rax = 0;
	/* not in a system call any more: the kernel must not restart one under our call */
	r.orig_rax = (uint64_t)-1;
	if (ptrace(PTRACE_SETREGS, b->tid, 0, &r) != 0 || ptrace(PTRACE_CONT, b->tid, 0, 0) != 0)
		return (uint64_t)-1;
	uint64_t until = now_ms() + timeout_ms;
	for (;;) {
		int status;
		pid_t w = waitpid(b->tid, &status, __WALL | WNOHANG);
		if (w == 0) {
			if (now_ms() > until) {
				fprintf(stderr, "ebpf-studio-inject: the call in thread %d did not return within %lu ms\n", b->tid, (unsigned long)timeout_ms);
				return (uint64_t)-1;
			}
			struct timespec ts = { 0, 1000 * 1000 };
			nanosleep(&ts, NULL);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || !WIFSTOPPED(status))
			die(1, "thread %d ended during the call", b->tid);
		if ((status >> 16) == PTRACE_EVENT_EXEC)
			exec_seen(b->tid);
		int sig = WSTOPSIG(status);
		struct user_regs_struct now;
		if (sig == SIGSEGV && ptrace(PTRACE_GETREGS, b->tid, 0, &now) == 0 && now.rip == 0) {
			*failed = false;
			return now.rax;
		}
		if ((status >> 16) == PTRACE_EVENT_STOP)
			sig = 0; /* a group stop: go on */
		/* any other signal is the program's: deliver it, the call continues after its handler */
		if (ptrace(PTRACE_CONT, b->tid, 0, (void *)(long)sig) != 0)
			return (uint64_t)-1;
	}
}

/* ---- seccomp filters ------------------------------------------------------------------------- */

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif

/* Distinct filters met so far (threads share them: each is printed once). Bounded: a process may
 * hold many threads and long chains, and the answer must stay small. */
#define MAX_FILTER_INSNS 4096
#define MAX_DISTINCT_INSNS (256 * 1024)
static struct { uint64_t *insns; long n; } distinct[1024];
static unsigned n_distinct;
static long distinct_insns;

/* The number of the distinct filter equal to insns[0..n), adding it if new; -1 past the bounds. */
static long filter_id(const uint64_t *insns, long n)
{
	for (unsigned i = 0; i < n_distinct; i++)
		if (distinct[i].n == n && memcmp(distinct[i].insns, insns, (size_t)n * 8) == 0)
			return i;
	if (n_distinct == sizeof distinct / sizeof distinct[0] || distinct_insns + n > MAX_DISTINCT_INSNS)
		return -1;
	uint64_t *copy = malloc((size_t)n * 8);
	if (!copy)
		return -1;
	memcpy(copy, insns, (size_t)n * 8);
	distinct[n_distinct].insns = copy;
	distinct[n_distinct].n = n;
	distinct_insns += n;
	return n_distinct++;
}

/* The thread's Seccomp: mode (0 none, 1 strict, 2 filter), or -1 when unreadable. */
static int seccomp_mode(pid_t tid)
{
	char file[96], text[4096];
	snprintf(file, sizeof file, "/proc/%d/task/%d/status", target, tid);
	if (!read_small(file, text, sizeof text))
		return -1;
	const char *m = status_field(text, "Seccomp");
	return m ? atoi(m) : -1;
}

/* Prints "thread TID F1 F2 ..." (the ids of its filters, the most recently installed first) for a
 * thread under filters. Reading them needs the thread stopped under our ptrace as root
 * (CAP_SYS_ADMIN): it is seized, interrupted, read and let go, nothing written; a signal that
 * stopped it instead of our interrupt is delivered at the detach. */
static void thread_filters(pid_t tid)
{
	int status;
	if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)PTRACE_O_TRACEEXEC) != 0)
		die(1, "cannot attach to thread %d to read its seccomp filters (%s)", tid, strerror(errno));
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 || !wait_stop(tid, &status)) {
		ptrace(PTRACE_DETACH, tid, 0, 0);
		die(1, "thread %d could not be stopped to read its seccomp filters", tid);
	}
	if ((status >> 16) == PTRACE_EVENT_EXEC)
		exec_seen(tid);
	int deliver = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
	/* held now: still the process, with the ids, the caller asked about (not a pid reused meanwhile) */
	const char *why = process_refusal(tid);
	if (why) {
		ptrace(PTRACE_DETACH, tid, 0, (void *)(long)deliver);
		refuse(why);
	}
	static uint64_t insns[MAX_FILTER_INSNS];
	printf("thread %d", tid);
	for (long idx = 0;; idx++) {
		long n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)idx, NULL);
		if (n < 0 && errno == ENOENT)
			break;
		if (n <= 0 || n > MAX_FILTER_INSNS || ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)idx, insns) != n) {
			int e = errno;
			ptrace(PTRACE_DETACH, tid, 0, (void *)(long)deliver);
			die(1, "seccomp filter %ld of thread %d cannot be read (%s)", idx, tid, n > MAX_FILTER_INSNS ? "too long" : strerror(e));
		}
		long id = filter_id(insns, n);
		if (id < 0) {
			ptrace(PTRACE_DETACH, tid, 0, (void *)(long)deliver);
			die(1, "process %d holds more seccomp filters than are read (over %d distinct instructions)", target, MAX_DISTINCT_INSNS);
		}
		printf(" %ld", id);
	}
	printf("\n");
	ptrace(PTRACE_DETACH, tid, 0, (void *)(long)deliver);
}

/* One thread's seccomp mode, or its filters, for print_filters. */
static bool print_thread_filters(pid_t tid, void *arg)
{
	(void)arg;
	int mode = seccomp_mode(tid);
	if (mode == 2)
		thread_filters(tid);
	else if (mode >= 0)
		printf("thread %d mode %d\n", tid, mode);
	return false;
}

/* `filters`: every thread's seccomp filters, so the caller can tell whether the injected code's
 * system calls are all allowed. Lines: "thread TID mode M" for a thread in no filter mode,
 * "thread TID F..." for one under filters, then "filter F HEX" per distinct filter (its
 * struct sock_filter records as the kernel holds them), then "ok 0". */
static void print_filters(void)
{
	each_thread(print_thread_filters, NULL);
	for (unsigned i = 0; i < n_distinct; i++) {
		printf("filter %u ", i);
		for (long j = 0; j < distinct[i].n; j++) {
			const uint8_t *b = (const uint8_t *)&distinct[i].insns[j];
			for (int k = 0; k < 8; k++)
				printf("%02x", b[k]);
		}
		printf("\n");
	}
	printf("ok 0\n");
}

/* ---- main ---------------------------------------------------------------------------------- */

/* A decimal argument up to max, or exit 2. */
static unsigned long long number(const char *s, const char *what, unsigned long long max)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end || errno || v > max)
		die(2, "not a %s: %s", what, s);
	return v;
}

/* The process is still the one asked for, with every thread as the caller found it, now that
 * one of them is held and before anything runs in it; else it goes back untouched. */
static void recheck(struct borrowed *b)
{
	const char *why = process_refusal(b->tid);
	if (!why)
		return;
	give_back(b);
	refuse(why);
}

int main(int argc, char **argv)
{
	bool start = argc > 1 && strcmp(argv[1], "start") == 0;
	bool filters = argc > 1 && strcmp(argv[1], "filters") == 0;
	if (argc != (start ? 8 : filters ? 6 : 7) || (!start && !filters && strcmp(argv[1], "stop") != 0))
		die(2, "usage: ebpf-studio-inject start PID UID GID START LIBRARY CONFIG | stop PID UID GID START LIBRARY | filters PID UID GID START");
	target = (pid_t)number(argv[2], "pid", 0x3fffffff);
	want_uid = (uid_t)number(argv[3], "uid", 0xfffffffe);
	want_gid = (gid_t)number(argv[4], "gid", 0xfffffffe);
	want_start = number(argv[5], "start time", ~0ull);
	if (target <= 0)
		die(2, "not a pid: %s", argv[2]);
	if (filters) {
		/* as root (the kernel hands filters to CAP_SYS_ADMIN only), for a process as the caller found it */
		same_userns = in_our_userns(&target_ns_owner);
		const char *why = process_refusal(0);
		if (why)
			refuse(why);
		if (geteuid() != 0)
			die(1, "reading seccomp filters needs root");
		print_filters();
		return 0;
	}
	const char *lib = argv[6];
	if (lib[0] != '/')
		die(2, "the library path must be absolute: %s", lib);
	/* first as root, to name what changed; then as the owner, and after the attach (see the header) */
	same_userns = in_our_userns(&target_ns_owner);
	const char *why = process_refusal(0);
	if (why)
		refuse(why);
	become_owner();

	struct find_module libc = find_module("/libc.so.6", false);
	struct find_module ld = find_module("/ld-linux-x86-64.so.2", false);
	if (!libc.found)
		die(1, "process %d has no libc.so.6 mapped: it is statically linked or not a glibc program", target);
	struct ranges unsafe = { { libc.text_lo, ld.text_lo }, { libc.text_hi, ld.text_hi } };

	uint64_t dlopen_at = 0;
	if (start) {
		uint64_t v = dynsym_value(&libc.first, "dlopen");
		if (!v) {
			/* glibc < 2.34 keeps dlopen in libdl */
			struct find_module libdl = find_module("/libdl.so.2", false);
			if (libdl.found && (v = dynsym_value(&libdl.first, "dlopen")))
				dlopen_at = libdl.first.start + v;
		} else {
			dlopen_at = libc.first.start + v;
		}
		if (!dlopen_at)
			die(1, "no dlopen in process %d's C library (glibc 2.34 or newer, or libdl, is needed)", target);
	}

	struct borrowed b;
	if (!borrow(&unsafe, &b, 3000))
		die(1, "no thread of process %d was at a safe point within 3 s: %s; %u times about to take a signal, %u times not stoppable", target, unsafe_why(), tries_signal, tries_failed);
	recheck(&b);

	bool failed;
	uint64_t result;
	if (start) {
		uint64_t handle = call(&b, dlopen_at, lib, RTLD_NOW, &failed, 10000);
		if (failed || handle == 0) {
			give_back(&b);
			if (failed)
				die(1, "dlopen in process %d did not complete", target);
			die(1, "dlopen of %s in process %d failed (is it readable by the process's user, and built for its C library?)", lib, target);
		}
	}
	struct find_module ours = find_module(lib, true);
	const char *fn = start ? "ebpf_studio_inject_start" : "ebpf_studio_inject_stop";
	uint64_t v = ours.found ? dynsym_value(&ours.first, fn) : 0;
	if (!v) {
		give_back(&b);
		if (start)
			die(1, "%s is not a leak tracer library (it has no %s)", lib, fn);
		die(1, "%s is not loaded in process %d: nothing to stop", lib, target);
	}
	recheck(&b);
	result = call(&b, ours.first.start + v, start ? argv[7] : NULL, 0, &failed, 10000);
	give_back(&b);
	if (failed)
		die(1, "%s in process %d did not complete", fn, target);
	printf("ok %ld\n", (long)(int)result);
	/* start: 0 is success, other values name what failed; stop: how many entries went back */
	return start ? ((int)result == 0 ? 0 : 1) : ((int)result >= 0 ? 0 : 1);
}
