// The agent's configuration file: JSON (no comments), every key optional, unknown keys refused so
// a typo does not silently turn a feature off. Errors name the file, the line and the fix.
//
// {
//   "listen": "127.0.0.1:9435",
//   "tls": { "certFile": "/etc/ebpf-studio/agent.crt", "keyFile": "/etc/ebpf-studio/agent.key" },
//   "auth": { "bearerTokenFile": "/etc/ebpf-studio/token" },          // or "basicAuthFile": lines user:password
//   "jvm": { "enabled": true, "mainClasses": ["com.example.Main"], "containers": ["4f1c2e9a0b7d", "/machine.slice/systemd-nspawn@web.service"], "minPauseUs": 0, "launchers": ["orderservice"] },
//   "runqueue": { "enabled": true, "per": "system", "intervalSeconds": 60, "maxCgroups": 100 },  // per: system | pidns | cgroup
//   "profile": { "enabled": true, "frequency": 99, "maxSeconds": 60, "offcpu": true, "allocs": true },
//   "histograms": { "biolatency": { "per": "disk", "queued": false, "intervalSeconds": 5, "maxSeries": 100 }, "tcplat": {}, "cpudist": {} },
//   "latency": [{ "binary": "/usr/sbin/nginx", "function": "ngx_http_process_request", "labels": { "service": "web" }, "containers": ["4f1c2e9a0b7d"], "intervalSeconds": 10 }],
//   "forgetExitedAfterSeconds": 300
// }
import { inputError } from '../protocol/errors';
import { histogramOf, HISTOGRAM_TRACERS } from '../protocol/catalog';
import type { HistOptions } from '../protocol/histogram';
import { kitTracers } from '../tracers/index';
import type { HistName } from '../tracers/histTracer';
import { readTrusted } from './files';
import { containerEntryKind } from './select';
import { MAX_EXTRA_LAUNCHERS } from '../tracers/javaGc/jvms';

export interface AgentConfig {
  listen?: string;
  tls?: { certFile: string; keyFile: string };
  auth?: { bearerTokenFile?: string; basicAuthFile?: string };
  /**
   * mainClasses, containers: which JVMs are covered (both given: a JVM must match both); see select.ts.
   * launchers: program names besides the JDK's whose execs are looked at as they happen (others every 30 s).
   */
  jvm: { enabled: boolean; mainClasses?: string[]; containers?: string[]; minPauseUs: number; launchers?: string[] };
  /** maxCgroups: per cgroup, at most this many series; waits of the others are counted under cgroup="other" */
  runqueue: { enabled: boolean; per: 'system' | 'pidns' | 'cgroup'; intervalSeconds: number; maxCgroups: number };
  /** enabled: profiles on request at all; offcpu: /debug/pprof/offcpu; allocs: /debug/pprof/allocs (loads the JVMTI agent into the JVM asked for) */
  profile: { enabled: boolean; frequency: number; maxSeconds: number; offcpu: boolean; allocs: boolean };
  /** the log2-histogram tracers exported as Prometheus histograms, off unless named (runqlat is "runqueue") */
  histograms: Partial<Record<KitExportName, KitExportConfig>>;
  /** native functions whose call latency is exported (ebpf_studio_function_latency_seconds), probed in every process that runs their file */
  latency: LatencyExportConfig[];
  /** series of a JVM that exited are dropped this long after its exit */
  forgetExitedAfterSeconds: number;
}

/** The kit tracers "histograms" may name: all but runqlat, which has its own section. */
export type KitExportName = Exclude<HistName, 'runqlat'>;
export const KIT_EXPORTS = HISTOGRAM_TRACERS.filter((n): n is KitExportName => n !== 'runqlat');

export interface KitExportConfig {
  enabled: boolean;
  /** the session's options (system-wide, µs, intervalSeconds, not retained): per and the tracer's flags as configured */
  options: HistOptions & Record<string, unknown>;
  /** at most this many series per key; the others count under the key "other" */
  maxSeries: number;
}

export interface LatencyExportConfig {
  /** the file as the processes running it name it (inside their own root: a container's path) */
  binary: string;
  /** a function name (C++: demangled, as latency takes it) or FILE:LINE */
  function: string;
  /** constant labels of its series */
  labels: Record<string, string>;
  /** only calls of processes in these containers (the form of jvm.containers); none: every process */
  containers?: string[];
  /** how often processes are looked through for new copies of the file, and the histograms read between scrapes */
  intervalSeconds: number;
}

/** Labels the agent sets itself on a function's series: "labels" may not name them. */
export const LATENCY_OWN_LABELS = ['function', 'binary', 'le', 'container', 'container_id', 'image', 'pod', 'namespace'];
const MAX_LATENCY_ENTRIES = 64;

export const DEFAULT_CONFIG: AgentConfig = {
  jvm: { enabled: true, minPauseUs: 0 },
  // Each scrape reads the run-queue histograms: between scrapes they are read only once a minute.
  runqueue: { enabled: true, per: 'system', intervalSeconds: 60, maxCgroups: 100 },
  profile: { enabled: true, frequency: 99, maxSeconds: 60, offcpu: true, allocs: true },
  histograms: {},
  latency: [],
  forgetExitedAfterSeconds: 300,
};

/** The helpers parseConfig reads its sections with (each names the file and line at fault). */
interface Readers {
  obj(v: unknown, path: string[]): Record<string, unknown>;
  only(o: Record<string, unknown>, path: string[], keys: string[]): void;
  bool(o: Record<string, unknown>, path: string[], k: string, d: boolean): boolean;
  num(o: Record<string, unknown>, path: string[], k: string, d: number, min: number, max: number): number;
  fail(path: string[], what: string): never;
  show(v: unknown): string;
}

/** histograms.<tracer>: its "per" mode and flags (the catalog's), checked as the tracer checks them. */
function kitExport(name: KitExportName, raw: unknown, r: Readers): KitExportConfig {
  const path = ['histograms', name];
  const o = r.obj(raw, path);
  const nouns = histogramOf(name);
  const pers = Object.keys(nouns.keyLabels);
  const flags = nouns.flags ?? [];
  r.only(o, path, ['enabled', 'per', 'intervalSeconds', 'maxSeries', ...flags]);
  const per = o.per ?? 'none';
  if (typeof per !== 'string' || !pers.includes(per)) r.fail([...path, 'per'], `must be ${pers.map((p) => `"${p}"`).join(', ')}, not ${r.show(per)}`);
  const own = Object.fromEntries(flags.map((f) => [f, r.bool(o, path, f, false)]));
  const options = { pid: 0, per: per as string, unit: 'us' as const, intervalS: r.num(o, path, 'intervalSeconds', 5, 1, 300), retain: false, ...own };
  try {
    kitTracers[name].validate(options);
  } catch (e) {
    r.fail(path, `is not a valid combination: ${(e as Error).message}`);
  }
  return { enabled: r.bool(o, path, 'enabled', true), options, maxSeries: r.num(o, path, 'maxSeries', 100, 1, 10000) };
}

/** latency[i]: a file, a function in it, and what its series carry. */
function latencyExport(raw: unknown, i: number, r: Readers): LatencyExportConfig {
  const path = ['latency', String(i)];
  const o = r.obj(raw, path);
  r.only(o, path, ['binary', 'function', 'labels', 'containers', 'intervalSeconds']);
  const binary = o.binary;
  if (typeof binary !== 'string' || !binary.startsWith('/') || binary.includes('\0') || binary.length > 4096) r.fail([...path, 'binary'], `must be the absolute path of the program or library (as the processes running it see it), not ${r.show(binary)}`);
  const fn = o.function;
  if (typeof fn !== 'string' || fn.trim() === '' || fn.includes('\0') || fn.length > 4096) r.fail([...path, 'function'], `must name a function (as nm -C shows it) or FILE:LINE, not ${r.show(fn)}`);
  const labels: Record<string, string> = {};
  if (o.labels !== undefined) {
    const l = r.obj(o.labels, [...path, 'labels']);
    for (const [k, v] of Object.entries(l)) {
      if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(k) || k.startsWith('__') || LATENCY_OWN_LABELS.includes(k)) r.fail([...path, 'labels'], `has the label name ${r.show(k)}: a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not __...) other than ${LATENCY_OWN_LABELS.join(', ')}`);
      if (typeof v !== 'string' || v.length > 256) r.fail([...path, 'labels'], `has ${r.show(k)}: its value must be a string of at most 256 characters`);
      labels[k] = v as string;
    }
  }
  const out: LatencyExportConfig = { binary: binary as string, function: (fn as string).trim(), labels, intervalSeconds: r.num(o, path, 'intervalSeconds', 10, 1, 300) };
  if (o.containers !== undefined) {
    const c = o.containers;
    if (!Array.isArray(c) || c.length === 0 || c.some((x) => typeof x !== 'string' || containerEntryKind(x) === undefined)) r.fail([...path, 'containers'], 'must be a non-empty list of container ids (12 to 64 hex digits) or cgroup v2 path patterns starting with /, as jvm.containers; leave it out for every process');
    out.containers = c as string[];
  }
  return out;
}

/** jvm.launchers: names a JVM's launcher has (a file's base name, as exec names the process), besides the JDK's. */
function launcherNames(v: unknown, r: Pick<Readers, 'fail' | 'show'>): string[] {
  const form = `a list of at most ${MAX_EXTRA_LAUNCHERS} program names, each the base name of a launcher's file (what ps -o comm= shows for its process), e.g. ["orderservice"]`;
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_EXTRA_LAUNCHERS) r.fail(['jvm', 'launchers'], `must be ${form}; leave it out for the JDK's launchers only`);
  const bad = (v as unknown[]).find((x) => typeof x !== 'string' || x === '' || x.includes('/') || x.includes('\0') || x.length > 255);
  if (bad !== undefined) r.fail(['jvm', 'launchers'], `has ${r.show(bad)}: each entry must be a program name, not a path: ${form}`);
  return v as string[];
}

/** 1-based line of a character offset. */
function lineAt(text: string, offset: number): number {
  return text.slice(0, Math.max(0, offset)).split('\n').length;
}

/** The line of a key path: each key is looked for after the previous one ("jvm" then "mainClasses"). */
function lineOfPath(text: string, path: string[]): number | undefined {
  let from = 0;
  let at = -1;
  for (const key of path) {
    if (/^\d+$/.test(key)) {
      // a list's entry: the start of its (key+1)-th element
      const el = listElement(text, from, Number(key));
      if (el < 0) return at >= 0 ? lineAt(text, at) : undefined;
      at = el;
      from = el + 1;
      continue;
    }
    const re = new RegExp(`"${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"\\s*:`, 'g');
    re.lastIndex = from;
    const m = re.exec(text);
    if (!m) return at >= 0 ? lineAt(text, at) : undefined;
    at = m.index;
    from = m.index + m[0].length;
  }
  return at >= 0 ? lineAt(text, at) : undefined;
}

/** Where the n-th element of the JSON list opening at or after `from` starts, or -1. */
function listElement(text: string, from: number, n: number): number {
  let depth = 0;
  let inString = false;
  let index = 0;
  let expecting = false;
  for (let i = text.indexOf('[', from); i >= 0 && i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (expecting && !/\s/.test(c)) {
      if (index === n) return i;
      expecting = false;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      depth++;
      if (depth === 1) expecting = true;
    } else if (c === ']' || c === '}') {
      if (--depth === 0) return -1;
    } else if (c === ',' && depth === 1) {
      index++;
      expecting = true;
    }
  }
  return -1;
}

/**
 * `echo`: whether errors may quote the file (a key, a value, JSON.parse's excerpt). Only for a file
 * every user may read anyway: a root-only file named by mistake (or on purpose, through sudo) must
 * not be shown in pieces by its error messages.
 */
export function parseConfig(text: string, file: string, echo = true): AgentConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    const msg = (e as Error).message;
    const pos = /at position (\d+)/.exec(msg);
    const line = pos ? lineAt(text, Number(pos[1])) : /Unexpected end/.test(msg) ? lineAt(text, text.length) : undefined;
    const why = echo ? ` (${msg.replace(/ in JSON at position \d+.*$/, '')})` : '';
    throw inputError(`${file}${line ? `:${line}` : ''}: not valid JSON${why}: fix that line; the format is described in docs/agent.md`);
  }
  const hidden = '(not shown: the file is not readable by every user)';
  const show = (v: unknown) => (echo ? JSON.stringify(v) : hidden);
  const fail = (path: string[], what: string): never => {
    const line = lineOfPath(text, path);
    throw inputError(`${file}${line ? `:${line}` : ''}: ${path.join('.') || 'the file'} ${what}`);
  };
  const obj = (v: unknown, path: string[]): Record<string, unknown> => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(path, 'must be a JSON object ({ ... })');
    return v as Record<string, unknown>;
  };
  const only = (o: Record<string, unknown>, path: string[], keys: string[]) => {
    for (const k of Object.keys(o)) {
      if (keys.includes(k)) continue;
      if (echo) fail([...path, k], `is not a known key: use one of ${keys.join(', ')}`);
      const line = lineOfPath(text, [...path, k]);
      throw inputError(`${file}${line ? `:${line}` : ''}: ${path.join('.') || 'the top level'} has a key that is not known ${hidden}: use one of ${keys.join(', ')}`);
    }
  };
  const bool = (o: Record<string, unknown>, path: string[], k: string, d: boolean): boolean => {
    if (o[k] === undefined) return d;
    if (typeof o[k] !== 'boolean') fail([...path, k], 'must be true or false');
    return o[k] as boolean;
  };
  const num = (o: Record<string, unknown>, path: string[], k: string, d: number, min: number, max: number, integer = true): number => {
    if (o[k] === undefined) return d;
    const v = o[k];
    if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min || v > max) fail([...path, k], `must be a ${integer ? 'whole ' : ''}number from ${min} to ${max}, not ${show(v)}`);
    return v as number;
  };
  const str = (o: Record<string, unknown>, path: string[], k: string): string | undefined => {
    if (o[k] === undefined) return undefined;
    if (typeof o[k] !== 'string' || (o[k] as string) === '') fail([...path, k], 'must be a non-empty string');
    return o[k] as string;
  };

  const top = obj(raw, []);
  only(top, [], ['listen', 'tls', 'auth', 'jvm', 'runqueue', 'profile', 'histograms', 'latency', 'forgetExitedAfterSeconds']);
  const cfg: AgentConfig = structuredClone(DEFAULT_CONFIG);
  const listen = str(top, [], 'listen');
  if (listen) cfg.listen = listen;
  if (top.tls !== undefined) {
    const t = obj(top.tls, ['tls']);
    only(t, ['tls'], ['certFile', 'keyFile']);
    const certFile = str(t, ['tls'], 'certFile');
    const keyFile = str(t, ['tls'], 'keyFile');
    if (!certFile || !keyFile) fail(['tls'], 'needs both certFile and keyFile (PEM files)');
    cfg.tls = { certFile: certFile!, keyFile: keyFile! };
  }
  if (top.auth !== undefined) {
    const a = obj(top.auth, ['auth']);
    only(a, ['auth'], ['bearerTokenFile', 'basicAuthFile']);
    cfg.auth = { bearerTokenFile: str(a, ['auth'], 'bearerTokenFile'), basicAuthFile: str(a, ['auth'], 'basicAuthFile') };
    if (!cfg.auth.bearerTokenFile && !cfg.auth.basicAuthFile) fail(['auth'], 'needs bearerTokenFile or basicAuthFile');
  }
  if (top.jvm !== undefined) {
    const j = obj(top.jvm, ['jvm']);
    only(j, ['jvm'], ['enabled', 'mainClasses', 'containers', 'minPauseUs', 'launchers']);
    cfg.jvm.enabled = bool(j, ['jvm'], 'enabled', true);
    cfg.jvm.minPauseUs = num(j, ['jvm'], 'minPauseUs', 0, 0, 3_600_000_000);
    if (j.mainClasses !== undefined) {
      const m = j.mainClasses;
      if (!Array.isArray(m) || m.length === 0 || m.some((x) => typeof x !== 'string' || x === '')) fail(['jvm', 'mainClasses'], 'must be a non-empty list of main class names (or -jar files), e.g. ["com.example.Main"]; leave it out for every JVM');
      cfg.jvm.mainClasses = m as string[];
    }
    if (j.containers !== undefined) {
      const c = j.containers;
      const form = 'a container id (12 to 64 hex digits, as docker ps, podman ps or crictl ps show it) or a cgroup v2 path pattern starting with / (* within a segment, ** across segments), e.g. ["4f1c2e9a0b7d", "/machine.slice/systemd-nspawn@web.service"]';
      if (!Array.isArray(c) || c.length === 0) fail(['jvm', 'containers'], `must be a non-empty list, each entry ${form}; leave it out for JVMs in any container or none`);
      const bad = (c as unknown[]).find((x) => typeof x !== 'string' || containerEntryKind(x) === undefined);
      if (bad !== undefined) fail(['jvm', 'containers'], `has ${show(bad)}: each entry must be ${form}`);
      cfg.jvm.containers = c as string[];
    }
    if (j.launchers !== undefined) cfg.jvm.launchers = launcherNames(j.launchers, { fail, show });
  }
  if (top.runqueue !== undefined) {
    const r = obj(top.runqueue, ['runqueue']);
    only(r, ['runqueue'], ['enabled', 'per', 'intervalSeconds', 'maxCgroups']);
    cfg.runqueue.enabled = bool(r, ['runqueue'], 'enabled', true);
    cfg.runqueue.intervalSeconds = num(r, ['runqueue'], 'intervalSeconds', DEFAULT_CONFIG.runqueue.intervalSeconds, 1, 300);
    cfg.runqueue.maxCgroups = num(r, ['runqueue'], 'maxCgroups', 100, 1, 10000);
    const per = r.per ?? 'system';
    if (per !== 'system' && per !== 'pidns' && per !== 'cgroup') fail(['runqueue', 'per'], `must be "system", "pidns" or "cgroup", not ${show(per)}`);
    cfg.runqueue.per = per as 'system' | 'pidns' | 'cgroup';
  }
  if (top.profile !== undefined) {
    const p = obj(top.profile, ['profile']);
    only(p, ['profile'], ['enabled', 'frequency', 'maxSeconds', 'offcpu', 'allocs']);
    cfg.profile.enabled = bool(p, ['profile'], 'enabled', true);
    cfg.profile.frequency = num(p, ['profile'], 'frequency', 99, 1, 10000);
    cfg.profile.maxSeconds = num(p, ['profile'], 'maxSeconds', 60, 1, 3600);
    cfg.profile.offcpu = bool(p, ['profile'], 'offcpu', true);
    cfg.profile.allocs = bool(p, ['profile'], 'allocs', true);
  }
  if (top.histograms !== undefined) {
    const h = obj(top.histograms, ['histograms']);
    only(h, ['histograms'], KIT_EXPORTS);
    for (const name of KIT_EXPORTS) if (h[name] !== undefined) cfg.histograms[name] = kitExport(name, h[name], { obj, only, bool, num, fail, show });
  }
  if (top.latency !== undefined) {
    if (!Array.isArray(top.latency) || top.latency.length > MAX_LATENCY_ENTRIES) fail(['latency'], `must be a list of at most ${MAX_LATENCY_ENTRIES} entries, each {"binary": "/path/of/program", "function": "name"}`);
    cfg.latency = (top.latency as unknown[]).map((e, i) => latencyExport(e, i, { obj, only, bool, num, fail, show }));
    const seen = new Set<string>();
    cfg.latency.forEach((e, i) => {
      const key = `${e.binary}\0${e.function}`;
      if (seen.has(key)) fail(['latency', String(i)], `names ${e.function} in ${e.binary} a second time: one entry per function and file (its probes and series are one)`);
      seen.add(key);
    });
  }
  cfg.forgetExitedAfterSeconds = num(top, [], 'forgetExitedAfterSeconds', 300, 0, 7 * 24 * 3600);
  return cfg;
}

export function readConfig(file: string): AgentConfig {
  const f = readTrusted(file, '--config', false);
  return parseConfig(f.text.toString('utf8'), file, f.worldReadable);
}
