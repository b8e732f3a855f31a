// A part of the Java agent that runs as its own session beside the profiler (the heap sampler,
// the lock tracer): started by one agent command, it appends text records to a file in the
// target's /tmp, which the tracer reads as it grows (opened once, as the JVM's owner inside its
// root, holding the reader's lock the agent watches: ./readerLock.ts), and stops on another
// command. The file is removed at stop, whatever the agent said. The target is kept by pid and
// start time: the stop command goes to this JVM or to none.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { StudioError, unsuitableError } from '../../protocol/errors';
import { identify, sameProcess, type ProcessIdentity } from '../../sys/proc/processes';
import { openAs, unlinkAs, type FileOwner } from '../../sys/asUser';
import { namespacePid } from '../../sys/jvm/attach';
import type { ResultOf, TracerName } from '../../protocol/protocol';
import type { Session, SessionEvents, TracerEnv } from '../tracer';
import { agentCommand } from './agent';
import { holdReaderLock, noteAgentLimit } from './readerLock';

export interface AgentPartSpec {
  pid: number;
  /** the JVM's owner: the file is opened and removed as that user, inside the JVM's root */
  ids: { uid: number; gid: number };
  /** where the agent library is, as the target sees it (placeAgent) */
  libInTarget: string;
  /** the log prefix and file name part: "java-heap", "java-locks" */
  label: string;
  /** the agent's start command given the output path in the target ("heap,out=/tmp/…,interval=…") */
  startCommand: (outInTarget: string) => string;
  stopCommand: string;
  /** why the start failed, from the agent's return code */
  startFailure: (code: number) => string;
  /** how the records are decoded into text (method and class names are the JVM's modified UTF-8) */
  encoding: BufferEncoding;
  feed: (text: string) => void;
}

export interface AgentPart {
  /** the JVM, by pid and start time */
  target: ProcessIdentity;
  /** reads what the agent appended since the last read */
  read(): void;
  /** stops the part in the JVM (if it still runs), reads the rest and removes the file */
  stop(): Promise<void>;
}

export async function startAgentPart(spec: AgentPartSpec, env: TracerEnv): Promise<AgentPart> {
  const { pid, libInTarget, label } = spec;
  const target = identify(pid);
  if (!target) throw new StudioError('input', `no process with pid ${pid} is running`);
  const owner: FileOwner = { uid: spec.ids.uid, gid: spec.ids.gid, pid };
  const outName = `.ebpf-studio-${label.replace(/^java-/, '')}-${namespacePid(pid)}-${crypto.randomBytes(4).toString('hex')}.txt`;
  const outInTarget = `/tmp/${outName}`;
  let fd: number | undefined;
  const remove = () => {
    if (fd !== undefined) fs.closeSync(fd); // the reader's lock goes with it
    fd = undefined;
    try {
      unlinkAs(owner, outInTarget);
    } catch {
      /* not created, or gone with the JVM */
    }
  };
  const code = await agentCommand(pid, libInTarget, spec.startCommand(outInTarget), 15000);
  if (code !== 0) {
    remove();
    throw unsuitableError(spec.startFailure(code));
  }
  let offset = 0;
  let stopped = false;
  // Opened once, never through a link, as the JVM's owner inside its root; kept with its lock.
  const open = (): number | undefined => {
    if (fd !== undefined) return fd;
    try {
      const f = openAs(owner, outInTarget, fs.constants.O_RDONLY);
      if (!fs.fstatSync(f).isFile()) {
        fs.closeSync(f);
        return undefined;
      }
      fd = f;
      holdReaderLock(env.addon, f, env.log, label);
      return f;
    } catch {
      return undefined;
    }
  };
  const read = () => {
    const f = open();
    if (f === undefined) return;
    const buf = Buffer.alloc(1 << 20);
    for (;;) {
      const got = fs.readSync(f, buf, 0, buf.length, offset);
      if (got <= 0) break;
      offset += got;
      const text = buf.subarray(0, got).toString(spec.encoding);
      noteAgentLimit(text, env.log, label);
      spec.feed(text);
    }
  };
  open();
  return {
    target,
    read,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (sameProcess(target)) {
        try {
          const c = await agentCommand(pid, libInTarget, spec.stopCommand, 15000);
          if (c !== 0) env.log(`${label}: the agent's ${spec.stopCommand} returned ${c}`);
        } catch (e) {
          env.log(`${label}: stopping it in pid ${pid} failed: ${(e as Error).message}`);
        }
      }
      try {
        read();
      } catch (e) {
        env.log(`${label}: reading ${outInTarget} in pid ${pid} failed: ${(e as Error).message}`);
      }
      remove();
    },
  };
}

export interface AgentPartSessionSpec<N extends TracerName> {
  /** the JVM by pid and start time (AgentPart.target): the session ends when it exits */
  target: ProcessIdentity;
  /** the log prefix: "java-heap", "java-locks" */
  label: string;
  /** reads what the agent appended since the last read (AgentPart.read) */
  read: () => void;
  /** after each poll's read: live updates, as the tracer paces them */
  tick: () => void;
  /** the figures so far, from what has been read */
  result: () => ResultOf<N>;
  /** stops the part in the JVM (AgentPart.stop and what the tracer logs) and returns the final figures */
  end: () => Promise<ResultOf<N>>;
}

/**
 * The session a tracer returns for an agent part (the heap sampler, the lock tracer). Every 250 ms
 * while it runs, `read` what the agent appended (a failure is logged, the next poll tries again)
 * and `tick`; the timer also keeps the process alive, which no BPF handle does for these sessions.
 * A snapshot reads first (a failure is left to the next poll to report) and returns `result()`.
 * Stop, or the target's exit (then reported through `events.ended`), stops polling and returns
 * `end()`'s figures, the same ones to every later stop and snapshot.
 */
export function agentPartSession<N extends TracerName>(spec: AgentPartSessionSpec<N>, env: TracerEnv, events: SessionEvents<N>): Session<N> {
  const { target, label } = spec;
  const { pid } = target;
  let final: ResultOf<N> | undefined;
  let polling = true;
  const stopPolling = () => {
    polling = false;
    clearInterval(timer);
  };
  const finish = async (): Promise<ResultOf<N>> => {
    if (final) return final;
    stopPolling();
    final = await spec.end();
    return final;
  };
  const timer = setInterval(() => {
    if (!polling) return;
    if (!sameProcess(target)) {
      stopPolling();
      void finish().then(() => events.ended('target-exited', `pid ${pid} exited`));
      return;
    }
    try {
      spec.read();
    } catch (e) {
      env.log(`${label}: reading the agent's file in pid ${pid} failed: ${(e as Error).message}`);
    }
    spec.tick();
  }, 250);
  return {
    targets: [pid],
    warnings: [],
    snapshot() {
      if (final) return final;
      try {
        spec.read();
      } catch {
        /* the next poll says why */
      }
      return spec.result();
    },
    stop: finish,
  };
}
