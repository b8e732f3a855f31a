// Writes a new BPF project from projectTemplates into a folder (editor command and CLI share it):
// refuses a non-empty folder, copies the running kernel's vmlinux.h in, and records compile
// commands for both halves so clangd is right before the first build. No vscode here.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inputError, StudioError } from '../protocol/errors';
import { archInfo } from './buildCommand';
import { updateCompileCommands } from './compileCommands';
import { projectBpfFlags, projectFiles, TEMPLATE_INFO, TEMPLATES, type TemplateName } from './projectTemplates';

export function parseTemplate(name: string): TemplateName {
  if ((TEMPLATES as readonly string[]).includes(name)) return name as TemplateName;
  throw inputError(`unknown template "${name}": choose one of ${TEMPLATES.join(', ')}`);
}

export interface CreatedProject {
  dir: string;
  app: string;
  files: string[];
}

/** Creates the project in `dir` (made if missing; must be empty). `vmlinuxDir` holds a generated vmlinux.h. */
export function createProject(dir: string, template: TemplateName, vmlinuxDir: string): CreatedProject {
  const arch = archInfo(os.arch());
  if (!arch) throw new StudioError('unsuitable', `BPF projects on ${os.arch()} are not supported (x64, arm64, s390x, ppc64, riscv64 are)`);
  const root = path.resolve(dir);
  if (fs.existsSync(root)) {
    if (!fs.statSync(root).isDirectory()) throw inputError(`${root} exists and is not a folder: give a new or empty folder for the project`);
    if (fs.readdirSync(root).length) throw inputError(`${root} is not empty: give a new or empty folder, so no file of yours is overwritten`);
  }
  fs.mkdirSync(path.join(root, '.vscode'), { recursive: true });
  const files = projectFiles(template, root, arch);
  for (const f of files) fs.writeFileSync(path.join(root, f.path), f.content);
  fs.copyFileSync(path.join(vmlinuxDir, 'vmlinux.h'), path.join(root, 'vmlinux.h'));
  const app = TEMPLATE_INFO[template].app;
  updateCompileCommands(root, [
    { directory: root, file: path.join(root, `${app}.bpf.c`), arguments: ['clang', ...projectBpfFlags(root, arch), '-c', `${app}.bpf.c`, '-o', `${app}.bpf.o`], output: `${app}.bpf.o` },
    { directory: root, file: path.join(root, `${app}.c`), arguments: ['cc', '-O2', '-g', '-Wall', '-Werror=implicit-function-declaration', `-I${root}`, '-c', `${app}.c`, '-o', `${app}.o`], output: `${app}.o` },
  ]);
  return { dir: root, app, files: [...files.map((f) => f.path), 'vmlinux.h', 'compile_commands.json'] };
}

/** The loader a source belongs to: X.bpf.c, X.c or X.h in a folder with a Makefile → folder/X. */
export function loaderFor(file: string): { dir: string; app: string } | undefined {
  const m = /^(.+?)(\.bpf)?\.[ch]$/.exec(path.basename(file));
  if (!m) return undefined;
  const dir = path.dirname(file);
  return fs.existsSync(path.join(dir, 'Makefile')) ? { dir, app: m[1] } : undefined;
}
