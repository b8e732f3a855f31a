// SYNTAX TEST "source.c" "BPF injection: SEC, maps, helpers, CO-RE and program macros"
#include "vmlinux.h"

/// @sample {"interval": 1000, "type": "log2_hist"}
// <--- comment.line.triple-slash.annotation.bpf
//  ^^^^^^^ storage.type.annotation.bpf
//          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ string.unquoted.annotation.json.bpf
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
//  ^^^^^^ support.macro.map-def.bpf
//         ^^^^ variable.other.member.map-attribute.bpf
//               ^^^^^^^^^^^^^^^^^ support.constant.bpf
    __type(key, __u32);
//  ^^^^^^ support.macro.map-def.bpf
//         ^^^ variable.other.member.map-attribute.bpf
} counts SEC(".maps");
//       ^^^ storage.modifier.sec.bpf
//            ^^^^^ entity.name.tag.section.bpf

SEC("tracepoint/sched/sched_switch")
// <--- storage.modifier.sec.bpf
//   ^^^^^^^^^^ entity.name.tag.section.bpf
//   ^^^^^^^^^^ string.quoted.double.section.bpf
//             ^^^^^^^^^^^^^^^^^^^ string.unquoted.section-target.bpf
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev)
//  ^^^^^^^^ support.macro.program.bpf
//           ^^^^^^^^^ entity.name.function.bpf
{
    __u32 pid = BPF_CORE_READ(prev, pid);
//              ^^^^^^^^^^^^^ support.function.core-read.bpf
    __u64 *v = bpf_map_lookup_elem(&counts, &pid);
//             ^^^^^^^^^^^^^^^^^^^ support.function.helper.bpf
    bpf_printk("pid %d", pid); // bpf_ktime_get_ns() in a comment stays a comment
//  ^^^^^^^^^^ support.function.helper.bpf
//                                ^^^^^^^^^^^^^^^^ - support.function.helper.bpf
//                                ^^^^^^^^^^^^^^^^ comment.line.double-slash.c
    return bpf_map_update_elem(&counts, &pid, v, BPF_ANY);
//                                               ^^^^^^^ support.constant.bpf
}

SEC("usdt")
//   ^^^^ entity.name.tag.section.bpf
int BPF_USDT(on_gc, int full)
//  ^^^^^^^^ support.macro.program.bpf
{
    const char *s = "bpf_get_current_pid_tgid()";
//                   ^^^^^^^^^^^^^^^^^^^^^^^^ - support.function.helper.bpf
    return 0;
}
