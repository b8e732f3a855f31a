/* What bpf/runqlat.bpf.c keeps its histograms per (the layout is the kit's, hist_tracer.bpf.h). */
#ifndef EBPF_STUDIO_RUNQLAT_H
#define EBPF_STUDIO_RUNQLAT_H

/* Values of the key_mode rodata variable: what a histogram is kept per. */
#define RUNQLAT_KEY_ALL 0      /* one histogram, key 0xffffffff (-1) */
#define RUNQLAT_KEY_PROCESS 1  /* per tgid */
#define RUNQLAT_KEY_THREAD 2   /* per tid */
#define RUNQLAT_KEY_PIDNS 3    /* per pid namespace inode number */
#define RUNQLAT_KEY_CGROUP 4   /* per cgroup v2 (low 32 bits of its id: the inode number of its directory) */

#endif
