// Java targets of the latency tracer: whether the process is a JVM, which method the operand
// names (Class.method, all overloads, or Class.method(descriptor) for one), and which path times
// it on this JDK. Pure but for the /proc reads of isJvm and jvmFeature.
import { inputError } from '../../protocol/errors';
import { processInfo } from '../../sys/proc/processes';
import { javaMethodFilter } from './jfrMethodTrace';

export interface JavaMethod {
  /** dotted class name as given: full (com.x.Foo, nested com.x.Foo$Bar) or simple (Foo) */
  className: string;
  method: string;
  /** JVM descriptor, e.g. (Ljava/lang/String;)I; '' = every overload */
  descriptor: string;
}

const IDENT = /^[A-Za-z_$][\w$]*$/;
// class names in a descriptor: no ',' or '=' either, which would split the agent's options
const DESCRIPTOR = /^\((\[*([BCDFIJSZ]|L[^;.[(),=\s]+;))*\)(V|\[*([BCDFIJSZ]|L[^;.[(),=\s]+;))$/;

/** Parses `Class.method` or `Class.method(descriptor)`; undefined when the operand is not of that form. */
export function parseJavaMethod(text: string): JavaMethod | undefined {
  const operand = text.replace('::', '.');
  const paren = operand.indexOf('(');
  const head = paren < 0 ? operand : operand.slice(0, paren);
  const descriptor = paren < 0 ? '' : operand.slice(paren);
  const dot = head.lastIndexOf('.');
  if (dot <= 0 || dot === head.length - 1) return undefined;
  const className = head.slice(0, dot);
  const method = head.slice(dot + 1);
  if (!IDENT.test(method) || !className.split('.').every((p) => IDENT.test(p))) return undefined;
  if (descriptor && (!DESCRIPTOR.test(descriptor) || descriptor.length > 600)) return undefined;
  if (className.length > 400) return undefined;
  return { className, method, descriptor };
}

/** A Class.method operand, or the error a JVM target gets for anything else. */
export function javaMethodOf(pid: number, operand: string): JavaMethod {
  const m = parseJavaMethod(operand.trim());
  if (!m) {
    throw inputError(
      `pid ${pid} is a JVM: name a Java method as Class.method (e.g. com.example.Parser.parse or Parser.parse, every overload) or Class.method(descriptor) for one overload (e.g. Parser.parse(Ljava/lang/String;)I), not ${JSON.stringify(operand.slice(0, 200))}`,
    );
  }
  return m;
}

/** Which path times a Java method on a JVM of this feature release: the JVM's own JFR method
 * tracing from JDK 25, our agent (with the JDK's internal ASM) before. */
export function javaLatencyPath(feature: number | undefined): 'agent' | 'jfr' {
  return (feature ?? 0) >= 25 ? 'jfr' : 'agent';
}

/** How one latency session runs: 'native' (uprobes) unless the process is a JVM and the operand names a Java method. */
export function latencyRoute(pid: number, target: string): 'native' | 'agent' | 'jfr' {
  const jvm = processInfo(pid)?.jvm;
  if (!jvm || (parseJavaMethod(target.trim()) === undefined && javaMethodFilter(target) === undefined)) return 'native';
  return javaLatencyPath(jvm.feature);
}
