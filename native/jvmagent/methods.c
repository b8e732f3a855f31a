// See methods.h.
#include "methods.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void clean_text(char *s) {
  for (; s && *s; s++)
    if (*s == '\t' || *s == '\n') *s = ' ';
}

char *class_name(char *sig) {
  if (!sig) return sig;
  size_t n = strlen(sig);
  if (n >= 2 && sig[0] == 'L' && sig[n - 1] == ';') {
    sig[n - 1] = 0;
    sig++;
  }
  for (char *p = sig; *p; p++)
    if (*p == '/') *p = '.';
  return sig;
}

void method_capabilities(jvmtiEnv *jv) {
  jvmtiCapabilities caps;
  memset(&caps, 0, sizeof(caps));
  caps.can_get_line_numbers = 1;
  caps.can_get_source_file_name = 1;
  (*jv)->AddCapabilities(jv, &caps);
}

static void release(jvmtiEnv *jv, char *s) {
  if (s) (*jv)->Deallocate(jv, (unsigned char *)s);
}

java_method *method_get(method_table *t, jvmtiEnv *jv, JNIEnv *jni, jmethodID id, FILE *out) {
  unsigned h = (unsigned)(((uintptr_t)id >> 3) * 2654435761u) & (METHOD_BUCKETS - 1);
  for (java_method *m = t->buckets[h]; m; m = m->next)
    if (m->id == id) return m;
  java_method *m = calloc(1, sizeof(*m));
  if (!m) return NULL;
  m->id = id;
  m->index = ++t->count;
  char *name = NULL, *csig = NULL, *file = NULL;
  jclass cls = NULL;
  jboolean is_native = JNI_FALSE;
  if ((*jv)->GetMethodName(jv, id, &name, NULL, NULL) != JVMTI_ERROR_NONE) name = NULL;
  if (name && (*jv)->GetMethodDeclaringClass(jv, id, &cls) == JVMTI_ERROR_NONE) {
    if ((*jv)->GetClassSignature(jv, cls, &csig, NULL) != JVMTI_ERROR_NONE) csig = NULL;
    if ((*jv)->GetSourceFileName(jv, cls, &file) != JVMTI_ERROR_NONE) file = NULL;
  }
  if (name) {
    (*jv)->IsMethodNative(jv, id, &is_native);
    m->native = is_native == JNI_TRUE;
    if (!m->native && (*jv)->GetLineNumberTable(jv, id, &m->nlines, &m->lines) != JVMTI_ERROR_NONE) {
      m->nlines = 0;
      m->lines = NULL;
    }
  }
  clean_text(name);
  clean_text(csig);
  clean_text(file);
  fprintf(out, "M\t%d\t%s\t%s\t%s\t%d\n", m->index, csig ? class_name(csig) : "[unknown class]", name ? name : "[unknown method]", file ? file : "-", m->native);
  release(jv, name);
  release(jv, csig);
  release(jv, file);
  if (cls && jni) (*jni)->DeleteLocalRef(jni, cls);
  m->next = t->buckets[h];
  t->buckets[h] = m;
  return m;
}

int method_line(const java_method *m, jlocation bci) {
  int line = -1;
  if (!m || bci < 0) return -1;
  for (jint i = 0; i < m->nlines; i++) {
    if (m->lines[i].start_location > bci) break;
    line = m->lines[i].line_number;
  }
  return line;
}

void method_table_clear(method_table *t, jvmtiEnv *jv) {
  for (int b = 0; b < METHOD_BUCKETS; b++) {
    for (java_method *m = t->buckets[b], *next; m; m = next) {
      next = m->next;
      if (m->lines) (*jv)->Deallocate(jv, (unsigned char *)m->lines);
      free(m);
    }
    t->buckets[b] = NULL;
  }
  t->count = 0;
}
