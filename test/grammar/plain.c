// SYNTAX TEST "source.c" "ordinary C is left alone by the BPF injection"
#include <stdio.h>

static int section(const char *s) { return 0; }
//         ^^^^^^^ - storage.modifier.sec.bpf

int main(void)
{
    int SECOND = 1; /* SEC("x") in a comment */
//      ^^^^^^ - storage.modifier.sec.bpf
//                    ^^^ - storage.modifier.sec.bpf
    printf("bpf_map_lookup_elem(%d)\n", SECOND);
//          ^^^^^^^^^^^^^^^^^^^ - support.function.helper.bpf
    return bpf_custom_thing(1);
//         ^^^^^^^^^^^^^^^^ - support.function.helper.bpf
}
