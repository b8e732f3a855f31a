// The files of a new libbpf-style BPF project (command "eBPF: New BPF Project" and
// `ebpf-studio new-project`): X.bpf.c (kernel half), X.h (structs both halves share), X.c
// (user-space loader built on the skeleton `bpftool gen skeleton` makes), a Makefile that builds
// both against the system's libbpf (libbpf-dev), and VS Code tasks that run it (used when the
// project is opened as the workspace folder; below the root the extension's task provider offers
// the same tasks, see PROJECT_TASKS). Pure: the caller
// writes the files. The Makefile's clang flags are bpfClangArgs', so the compile_commands.json
// entry written with the project describes exactly what `make` runs.
import path from 'node:path';
import { bpfClangArgs, type ArchInfo } from './buildCommand';

export const TEMPLATES = ['minimal', 'ringbuf'] as const;
export type TemplateName = (typeof TEMPLATES)[number];

export interface ProjectFile {
  path: string;
  content: string;
}

export interface TemplateInfo {
  /** base name of X.bpf.c / X.h / X.c and of the loader binary */
  app: string;
  summary: string;
  /** a line the loader prints once per traced exec; tests and docs rely on its shape */
  outputPattern: RegExp;
}

export const TEMPLATE_INFO: Record<TemplateName, TemplateInfo> = {
  minimal: { app: 'minimal', summary: 'a tracepoint program that counts execve() calls; the loader prints the count every second', outputPattern: /^execve calls: (\d+)/m },
  ringbuf: { app: 'execwatch', summary: 'a tracepoint program that sends one ring-buffer record per exec; the loader prints each', outputPattern: /^exec pid=\d+ ppid=\d+ comm=(\S+)/m },
};

/** The clang arguments the project's Makefile uses (vmlinux.h lives in the project folder). */
export function projectBpfFlags(dir: string, arch: ArchInfo): string[] {
  return bpfClangArgs({ vmlinuxDir: dir, arch });
}

const MINIMAL_BPF = `// SPDX-License-Identifier: GPL-2.0
/* Kernel half: counts execve() calls system-wide and remembers who made the last one. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "minimal.h"

char LICENSE[] SEC("license") = "GPL";

/* Lives in .bss: the loader reads it through skel->bss without any map lookup. */
struct exec_stats stats = {};

SEC("tp/syscalls/sys_enter_execve")
int count_execve(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	__sync_fetch_and_add(&stats.calls, 1);
	stats.last_tgid = tgid;
	return 0;
}
`;

const MINIMAL_H = `/* Shared by minimal.bpf.c and minimal.c: keep it to fixed-size types. */
#ifndef MINIMAL_H
#define MINIMAL_H

struct exec_stats {
	__u64 calls;
	__u32 last_tgid;
	__u32 unused;
};

#endif
`;

const LOADER_COMMON = `#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
`;

const LOADER_SIGNALS = `static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

/* libbpf's own messages: warnings and errors only, on stderr. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void setup(void)
{
	/* Line-buffered even into a pipe, so the editor's terminal shows each line as it comes. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	libbpf_set_print(libbpf_log);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
}
`;

const MINIMAL_C = `// SPDX-License-Identifier: GPL-2.0
/* User-space half: loads minimal.bpf.o through its skeleton and prints the execve() count
 * once a second. Usage: sudo ./minimal [SECONDS]  (no argument: until Ctrl-C) */
${LOADER_COMMON}#include "minimal.h"
#include "minimal.skel.h"

${LOADER_SIGNALS}
int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 0;
	struct minimal_bpf *skel;
	__u64 before = 0;
	int err;

	setup();
	skel = minimal_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "minimal: loading the BPF object failed: %s (BPF needs root)\\n", strerror(errno));
		return 1;
	}
	err = minimal_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "minimal: attaching failed: %s\\n", strerror(-err));
		minimal_bpf__destroy(skel);
		return 1;
	}
	printf("minimal: counting execve() calls, Ctrl-C to stop\\n");
	for (int t = 0; !stopping && (seconds <= 0 || t < seconds); t++) {
		sleep(1);
		__u64 now = skel->bss->stats.calls;
		printf("execve calls: %llu (+%llu this second), last by pid %u\\n",
		       (unsigned long long)now, (unsigned long long)(now - before), skel->bss->stats.last_tgid);
		before = now;
	}
	minimal_bpf__destroy(skel);
	return 0;
}
`;

const RINGBUF_BPF = `// SPDX-License-Identifier: GPL-2.0
/* Kernel half: one ring-buffer record per successful exec, with the new program's name. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "execwatch.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

SEC("tp/sched/sched_process_exec")
int on_exec(struct trace_event_raw_sched_process_exec *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct exec_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return 0; /* buffer full: the loader is behind, drop this one */
	e->pid = bpf_get_current_pid_tgid() >> 32;
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
	return 0;
}
`;

const RINGBUF_H = `/* Shared by execwatch.bpf.c and execwatch.c: keep it to fixed-size types. */
#ifndef EXECWATCH_H
#define EXECWATCH_H

#define COMM_LEN 16

struct exec_event {
	__u32 pid;
	__u32 ppid;
	char comm[COMM_LEN];
};

#endif
`;

const RINGBUF_C = `// SPDX-License-Identifier: GPL-2.0
/* User-space half: loads execwatch.bpf.o through its skeleton and prints one line per exec
 * read from the ring buffer. Usage: sudo ./execwatch [SECONDS]  (no argument: until Ctrl-C) */
${LOADER_COMMON}#include <time.h>
#include "execwatch.h"
#include "execwatch.skel.h"

${LOADER_SIGNALS}
static int on_event(void *ctx, void *data, size_t size)
{
	const struct exec_event *e = data;

	(void)ctx;
	if (size < sizeof(*e))
		return 0;
	printf("exec pid=%u ppid=%u comm=%.*s\\n", e->pid, e->ppid, COMM_LEN, e->comm);
	return 0;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 0;
	struct execwatch_bpf *skel;
	struct ring_buffer *rb = NULL;
	time_t end = time(NULL) + seconds;
	int err;

	setup();
	skel = execwatch_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "execwatch: loading the BPF object failed: %s (BPF needs root)\\n", strerror(errno));
		return 1;
	}
	err = execwatch_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "execwatch: attaching failed: %s\\n", strerror(-err));
		goto out;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, NULL, NULL);
	if (!rb) {
		err = -errno;
		fprintf(stderr, "execwatch: opening the ring buffer failed: %s\\n", strerror(errno));
		goto out;
	}
	printf("execwatch: printing every exec, Ctrl-C to stop\\n");
	while (!stopping && (seconds <= 0 || time(NULL) < end)) {
		err = ring_buffer__poll(rb, 100);
		if (err == -EINTR) {
			/* Ctrl-C interrupted the wait: a normal way to stop, not a failure. */
			err = 0;
			break;
		}
		if (err < 0) {
			fprintf(stderr, "execwatch: polling failed: %s\\n", strerror(-err));
			break;
		}
		err = 0;
	}
out:
	ring_buffer__free(rb);
	execwatch_bpf__destroy(skel);
	return err ? 1 : 0;
}
`;

function makefile(app: string, flags: string[]): string {
  return `# Builds both halves of ${app} against the system's libbpf (Debian: apt-get install clang
# bpftool libbpf-dev libelf-dev zlib1g-dev make gcc). Run the loader as root: sudo ./${app}
APP := ${app}
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= cc
# The same flags eBPF Studio's build uses (and compile_commands.json records for clangd).
BPF_CFLAGS := ${flags.filter((f) => !f.startsWith('-I')).join(' ')} -I. ${flags.filter((f) => f.startsWith('-I/usr/include')).join(' ')}
# An undeclared function (a misspelt helper or libbpf call) is an error, not a warning.
CFLAGS ?= -O2 -g -Wall -Werror=implicit-function-declaration
LDLIBS := -lbpf -lelf -lz

all: $(APP)

# Types of the running kernel, for CO-RE.
vmlinux.h:
\t$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(APP).bpf.o: $(APP).bpf.c $(APP).h vmlinux.h
\t$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(APP).skel.h: $(APP).bpf.o
\t$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(APP): $(APP).c $(APP).h $(APP).skel.h
\t$(CC) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

bpf: $(APP).bpf.o
loader: $(APP)

clean:
\trm -f $(APP) $(APP).bpf.o $(APP).skel.h

.PHONY: all bpf loader clean
`;
}

/** The make tasks of a project: label suffix, make target, and whether it is the default build. */
export const PROJECT_TASKS: { suffix: string; target: string; isDefault: boolean }[] = [
  { suffix: 'build BPF object', target: 'bpf', isDefault: false },
  { suffix: 'build loader', target: 'loader', isDefault: false },
  { suffix: 'build both halves', target: 'all', isDefault: true },
];

function tasksJson(app: string): string {
  const make = (label: string, target: string, group?: object) => ({ label, type: 'shell', command: 'make', args: [target], problemMatcher: ['$gcc'], presentation: { reveal: 'always' }, ...(group ? { group } : {}) });
  return (
    JSON.stringify(
      {
        version: '2.0.0',
        tasks: PROJECT_TASKS.map((t) => make(`${app}: ${t.suffix}`, t.target, t.isDefault ? { kind: 'build', isDefault: true } : undefined)),
      },
      null,
      2,
    ) + '\n'
  );
}

/** Every file of the project, relative to its folder (vmlinux.h and compile_commands.json excluded). */
export function projectFiles(template: TemplateName, dir: string, arch: ArchInfo): ProjectFile[] {
  const app = TEMPLATE_INFO[template].app;
  const [bpf, h, c] = template === 'minimal' ? [MINIMAL_BPF, MINIMAL_H, MINIMAL_C] : [RINGBUF_BPF, RINGBUF_H, RINGBUF_C];
  return [
    { path: `${app}.bpf.c`, content: bpf },
    { path: `${app}.h`, content: h },
    { path: `${app}.c`, content: c },
    { path: 'Makefile', content: makefile(app, projectBpfFlags(path.resolve(dir), arch)) },
    { path: '.vscode/tasks.json', content: tasksJson(app) },
    { path: '.gitignore', content: `${app}\n*.o\n*.skel.h\nvmlinux.h\n` },
  ];
}
