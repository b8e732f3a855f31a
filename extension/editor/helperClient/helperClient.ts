// One privileged helper per window: started on first use, restarted on the next command after
// it dies, with the reason (exit code, signal, last stderr lines) shown. Commands: none.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import * as vscode from 'vscode';
import { createMessageConnection, ResponseError, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import * as proto from '../../protocol/protocol';
import { kindFromRpcCode, StudioError } from '../../protocol/errors';
import { effectiveCapabilities } from '../../tracers/capabilities';
import { LaunchRefused, planLaunch, planRunnerLaunch, which, type LaunchFacts } from '../../privilege/launch';
import { helperSettings } from './helperSettings';
import { installedVersion } from '../../privilege/installPlan';
import { checkSudoPassword, obtainSudoPassword } from './sudoPassword';
import { restrictedModeMessage, trustNeededFor } from '../ui/workspaceTrust';
import os from 'node:os';
import fs from 'node:fs';

export interface HelperDeath {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

export class HelperClient implements vscode.Disposable {
  private conn?: MessageConnection;
  private child?: ChildProcess;
  private starting?: Promise<MessageConnection>;
  private stderrTail: string[] = [];
  /** sudo's password for this window, in memory only (never on disk, argv or in a log) */
  private sudoPassword?: string;
  /** pkexec said there is no polkit agent to ask: use sudo from now on in this window */
  private noPolkitAgent = false;
  private readonly dataEmitter = new vscode.EventEmitter<proto.SessionDataParams>();
  private readonly endedEmitter = new vscode.EventEmitter<proto.SessionEndedParams>();
  private readonly deathEmitter = new vscode.EventEmitter<HelperDeath>();
  readonly onSessionData = this.dataEmitter.event;
  readonly onSessionEnded = this.endedEmitter.event;
  readonly onDidDie = this.deathEmitter.event;

  /**
   * `runner`: the root process for a user's own code (extension/runner/), started for one run and
   * authenticated every time (its password is never kept); `helper`: the tracing helper.
   */
  constructor(
    private readonly extensionPath: string,
    private readonly output: vscode.OutputChannel,
    private readonly role: 'helper' | 'runner' = 'helper',
  ) {}

  /** A new runner client (not started yet): one per run of the user's own code; dispose it when the run is over. */
  newRunner(): HelperClient {
    return new HelperClient(this.extensionPath, this.output, 'runner');
  }

  get running(): boolean {
    return this.conn !== undefined;
  }

  private facts(): LaunchFacts {
    const sudo = which('sudo');
    return {
      euid: process.geteuid?.() ?? 1000,
      capabilities: effectiveCapabilities(),
      pkexec: which('pkexec'),
      sudo,
      sudoNonInteractive: sudo ? spawnSync(sudo, ['-n', 'true'], { stdio: 'ignore', timeout: 3000 }).status === 0 : false,
      hasDisplay: !this.noPolkitAgent && Boolean(process.env.DISPLAY || process.env.WAYLAND_DISPLAY),
      execPath: process.execPath,
      systemNode: which('node'),
      installedVersion: installedVersion(),
      user: safeUserName(),
    };
  }

  async connection(): Promise<MessageConnection> {
    if (this.conn) return this.conn;
    if (!this.starting) this.starting = this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async start(): Promise<MessageConnection> {
    const settings = helperSettings();
    const runner = this.role === 'runner';
    const helperJs = path.join(this.extensionPath, 'dist', runner ? 'runner.js' : 'helper.js');
    const plan1 = (f: LaunchFacts) => (runner ? planRunnerLaunch(f, helperJs, settings.nodePath) : planLaunch(f, helperJs, settings.privilege, settings.nodePath));
    let plan;
    let facts = this.facts();
    try {
      plan = plan1(facts);
      const ours = this.version();
      if (plan.method !== 'direct' && facts.installedVersion && ours && facts.installedVersion !== ours) {
        const pick = await vscode.window.showWarningMessage(
          `The installed eBPF Studio helper is version ${facts.installedVersion}; this extension is ${ours}. Update the root-owned helper now?`,
          'Update',
          'Use installed',
        );
        if (pick === 'Update') {
          await vscode.commands.executeCommand('ebpfStudio.installHelper');
          facts = this.facts();
          plan = plan1(facts);
        }
      }
    } catch (e) {
      if (e instanceof LaunchRefused) throw new StudioError('privilege', e.message);
      throw e;
    }
    let password: string | undefined;
    if (plan.password) {
      const sudo = plan.command;
      try {
        password =
          this.sudoPassword ??
          (await obtainSudoPassword(
            (attempt, previous) =>
              vscode.window.showInputBox({
                password: true,
                ignoreFocusOut: true,
                title: 'eBPF Studio: sudo password',
                prompt: runner
                  ? `${previous ? `${previous}; try ${attempt} of 3. ` : ''}Running your own code as root: the password of ${facts.user ?? 'your user'} for sudo (asked for every run, never kept).`
                  : `${previous ? `${previous}; try ${attempt} of 3. ` : ''}Tracing needs root: the password of ${facts.user ?? 'your user'} for sudo (kept in memory for this window only).`,
              }),
            (pw) => checkSudoPassword(sudo, pw),
          ));
      } catch (e) {
        throw new StudioError('privilege', (e as Error).message);
      }
      // The runner authenticates every run: its password is used once and never kept.
      if (!runner) this.sudoPassword = password;
    }
    this.output.appendLine(`starting ${this.role} (${plan.method}): ${plan.command} ${plan.args.join(' ')}`);
    const child = spawn(plan.command, plan.args, { env: plan.env, stdio: ['pipe', 'pipe', 'pipe'] });
    // sudo -S reads the password byte by byte up to the newline, so nothing after it is lost.
    if (password !== undefined) child.stdin!.write(`${password}\n`);
    this.child = child;
    this.stderrTail = [];
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      for (const line of chunk.split('\n')) {
        if (!line) continue;
        this.output.appendLine(line);
        this.stderrTail.push(line);
        if (this.stderrTail.length > 20) this.stderrTail.shift();
      }
    });
    const conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    conn.onNotification(proto.sessionData, (p) => this.dataEmitter.fire(p));
    conn.onNotification(proto.sessionEnded, (p) => this.endedEmitter.fire(p));
    conn.onNotification(proto.helperLog, (p) => this.output.appendLine(p.message));
    conn.listen();
    const exited = new Promise<HelperDeath>((resolve) => {
      child.once('error', (err) => resolve({ code: null, signal: null, stderr: `${err.message}` }));
      child.once('exit', (code, signal) => resolve({ code, signal, stderr: this.stderrTail.join('\n') }));
    });
    void exited.then((death) => {
      if (this.child !== child) return;
      this.conn?.dispose();
      this.conn = undefined;
      this.child = undefined;
      this.output.appendLine(`helper exited (code ${death.code}, signal ${death.signal})`);
      this.deathEmitter.fire(death);
    });
    // The first request proves the helper is up (pkexec may be waiting for a password).
    const ready = conn.sendRequest(proto.capabilities).then(() => conn);
    const outcome = await Promise.race([ready, exited.then((d) => d)]);
    if (!('sendRequest' in outcome)) {
      if (plan.method === 'sudo-password') this.sudoPassword = undefined;
      // A display but no polkit agent (e.g. a forwarded X session): ask for sudo's password instead.
      if (plan.method === 'pkexec' && !this.noPolkitAgent && facts.sudo && /No authentication agent|no polkit agent|Cannot (register|create) authentication agent/i.test(outcome.stderr)) {
        this.noPolkitAgent = true;
        this.output.appendLine('pkexec found no polkit authentication agent; using sudo instead');
        return this.start();
      }
      throw new StudioError(
        plan.method === 'direct' ? 'internal' : 'privilege',
        `the ${runner ? 'runner' : 'helper'} did not start (${describeDeath(outcome)}). ${plan.method === 'pkexec' ? 'Authentication was refused or no polkit agent is running.' : ''}`.trim(),
      );
    }
    this.conn = conn;
    return conn;
  }

  async request<P, R>(type: proto.RequestTypeLike<P, R>, params: P): Promise<R> {
    const why = vscode.workspace.isTrusted === false ? trustNeededFor(type.method, params) : undefined;
    if (why) throw new StudioError('privilege', restrictedModeMessage(why));
    const conn = await this.connection();
    try {
      return (await conn.sendRequest(type as never, params as never)) as R;
    } catch (e) {
      if (e instanceof ResponseError) throw new StudioError(kindFromRpcCode(e.code), e.message);
      throw e;
    }
  }

  async restart(): Promise<void> {
    this.dispose();
    await this.connection();
  }

  private version(): string | undefined {
    try {
      return (JSON.parse(fs.readFileSync(path.join(this.extensionPath, 'package.json'), 'utf8')) as { version?: string }).version;
    } catch {
      return undefined;
    }
  }

  dispose(): void {
    const child = this.child;
    this.conn?.dispose();
    this.conn = undefined;
    this.child = undefined;
    // Closing stdin makes the helper detach everything and exit.
    child?.stdin?.end();
    if (child) setTimeout(() => child.kill('SIGTERM'), 1500).unref();
  }
}

function safeUserName(): string | undefined {
  try {
    return os.userInfo().username;
  } catch {
    return undefined;
  }
}

export function describeDeath(d: HelperDeath): string {
  const how = d.signal ? `killed by ${d.signal}` : `exit code ${d.code}`;
  return d.stderr ? `${how}; last output: ${d.stderr.split('\n').slice(-5).join(' | ')}` : how;
}

/** Runs `fn` with a runner started for it (authenticated for this one act), then ends the runner. */
export async function withRunner<T>(fn: (runner: HelperClient) => Promise<T>): Promise<T> {
  const runner = helper().newRunner();
  try {
    return await fn(runner);
  } finally {
    runner.dispose();
  }
}

let instance: HelperClient | undefined;
export function setHelper(h: HelperClient): void {
  instance = h;
}
export function helper(): HelperClient {
  if (!instance) throw new Error('eBPF Studio is not activated');
  return instance;
}
