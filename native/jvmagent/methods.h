// The Java methods one output stream has named. Each jmethodID met in a stack gets a small index
// and, the first time, one line "M <index> <class> <method> <source file or -> <native 0/1>", so
// records name frames as index:bci:line. The profile, heap and lock parts each keep a table of
// their own (each has its own JVMTI environment and output file) and fill it on their own
// service thread, never in a signal handler or an allocation callback.
#pragma once
#include <jvmti.h>
#include <stdio.h>

typedef struct java_method {
  jmethodID id;
  int index; // number announced in the "M" line
  int native;
  jint nlines;
  jvmtiLineNumberEntry *lines; // sorted by start_location
  struct java_method *next;
} java_method;

#define METHOD_BUCKETS 4096
typedef struct method_table {
  java_method *buckets[METHOD_BUCKETS];
  int count;
} method_table;

// Asks jv for what naming a frame's source file and line takes (can_get_line_numbers,
// can_get_source_file_name). A JVM that refuses them is still used: frames keep their names and
// lose file:line.
void method_capabilities(jvmtiEnv *jv);
// The method's entry, named on `out` when first met; NULL only when out of memory.
java_method *method_get(method_table *t, jvmtiEnv *jv, JNIEnv *jni, jmethodID id, FILE *out);
// The source line of a bytecode index, -1 when unknown (no table, native, negative bci).
int method_line(const java_method *m, jlocation bci);
// Forgets every method (a new output file names them anew).
void method_table_clear(method_table *t, jvmtiEnv *jv);

// Tabs and newlines to spaces, in place: the records are tab-separated lines.
void clean_text(char *s);
// "Lcom/x/Foo$Bar;" -> "com.x.Foo$Bar", in place.
char *class_name(char *sig);
