/* Only the tasks of one cgroup v2 subtree (a container's): target_cgroup is the low 32 bits of the
 * cgroup's kernfs id (the inode number of its directory, as user space stats it), and
 * target_cgroup_level its depth below the root; 0 traces every task. A task belongs when its
 * cgroup is that one or one below it (a container may make sub-cgroups of its own): its ancestor
 * at that level is the target. Kernels before 6.0 keep ancestor ids instead of pointers: there the
 * task's own cgroup must be the target. Needs vmlinux.h and <bpf/bpf_core_read.h> first. */
#ifndef EBPF_STUDIO_CGROUP_FILTER_BPF_H
#define EBPF_STUDIO_CGROUP_FILTER_BPF_H

const volatile __u32 target_cgroup = 0;
const volatile __u32 target_cgroup_level = 0;

static __always_inline bool in_target_cgroup(struct task_struct *t)
{
	struct cgroup *cg, *anc = NULL;

	if (!target_cgroup)
		return true;
	cg = BPF_CORE_READ(t, cgroups, dfl_cgrp);
	if (!cg || BPF_CORE_READ(cg, level) < (int)target_cgroup_level)
		return false;
	if (!bpf_core_field_exists(cg->ancestors))
		return (__u32)BPF_CORE_READ(cg, kn, id) == target_cgroup;
	bpf_core_read(&anc, sizeof(anc), &cg->ancestors[target_cgroup_level & 0xff]);
	return anc && (__u32)BPF_CORE_READ(anc, kn, id) == target_cgroup;
}

#endif
