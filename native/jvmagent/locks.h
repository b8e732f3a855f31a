// Lock contention (locks.c): the attach commands locks / locksstop / locksprobe.
#pragma once
#include <jni.h>

// Agent_OnAttach's answer for an options string that starts with "locks".
int locks_handle(JavaVM *vm, const char *options);
