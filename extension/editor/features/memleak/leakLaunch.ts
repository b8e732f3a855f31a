// What "Run with Leak Tracing" runs, without VS Code: a typed command line split into argv (no
// shell is involved, so quoting follows POSIX sh rules for '…', "…" and \ only), or a launch
// configuration's program/args/cwd/env with the common ${...} variables substituted.
export class CommandLineError extends Error {}

export function splitCommandLine(text: string): string[] {
  const out: string[] = [];
  let cur = '';
  let has = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new CommandLineError('unclosed single quote');
      cur += text.slice(i + 1, end);
      has = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new CommandLineError('unclosed double quote');
        const d = text[i];
        if (d === '"') break;
        if (d === '\\' && i + 1 < text.length && '"\\$`'.includes(text[i + 1])) {
          cur += text[i + 1];
          i += 2;
        } else {
          cur += d;
          i++;
        }
      }
      has = true;
      i++;
    } else if (c === '\\' && i + 1 < text.length) {
      cur += text[i + 1];
      has = true;
      i += 2;
    } else if (/\s/.test(c)) {
      if (has) out.push(cur);
      cur = '';
      has = false;
      i++;
    } else {
      cur += c;
      has = true;
      i++;
    }
  }
  if (has) out.push(cur);
  return out;
}

export interface LaunchConfigLike {
  name?: string;
  type?: string;
  program?: unknown;
  args?: unknown;
  cwd?: unknown;
  env?: unknown;
  environment?: unknown;
}

export interface ResolvedLaunch {
  command: string[];
  cwd?: string;
  env: Record<string, string>;
}

export function substitute(s: string, vars: { workspaceFolder?: string; file?: string; env: NodeJS.ProcessEnv }): string {
  return s.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
    if (name === 'workspaceFolder' || name === 'workspaceRoot') return vars.workspaceFolder ?? whole;
    if (name === 'workspaceFolderBasename') return vars.workspaceFolder?.split('/').pop() ?? whole;
    if (name === 'file') return vars.file ?? whole;
    if (name === 'fileBasenameNoExtension' && vars.file) return vars.file.split('/').pop()!.replace(/\.[^.]*$/, '');
    if (name === 'fileDirname' && vars.file) return vars.file.slice(0, vars.file.lastIndexOf('/'));
    if (name.startsWith('env:')) return vars.env[name.slice(4)] ?? '';
    throw new CommandLineError(`the variable ${whole} is not supported here: replace it with its value`);
  });
}

/** program + args + cwd + env of a launch configuration (cppdbg "environment" arrays too). */
export function fromLaunchConfig(cfg: LaunchConfigLike, vars: { workspaceFolder?: string; file?: string; env: NodeJS.ProcessEnv }): ResolvedLaunch {
  if (typeof cfg.program !== 'string' || !cfg.program) throw new CommandLineError(`launch configuration "${cfg.name ?? '?'}" has no "program"`);
  const args = Array.isArray(cfg.args) ? cfg.args.map((a) => substitute(String(a), vars)) : typeof cfg.args === 'string' ? splitCommandLine(substitute(cfg.args, vars)) : [];
  const env: Record<string, string> = {};
  if (cfg.env && typeof cfg.env === 'object' && !Array.isArray(cfg.env)) {
    for (const [k, v] of Object.entries(cfg.env as Record<string, unknown>)) if (v !== null && v !== undefined) env[k] = substitute(String(v), vars);
  }
  if (Array.isArray(cfg.environment)) {
    for (const e of cfg.environment as { name?: unknown; value?: unknown }[]) if (typeof e?.name === 'string') env[e.name] = substitute(String(e.value ?? ''), vars);
  }
  return {
    command: [substitute(cfg.program, vars), ...args],
    cwd: typeof cfg.cwd === 'string' ? substitute(cfg.cwd, vars) : vars.workspaceFolder,
    env,
  };
}
