// A part of the Java agent that runs as its own session beside the profiler (the heap sampler,
// the lock tracer): started by one agent command, it appends text records to a file in the
// target's /tmp, which the tracer reads as it grows through /proc/PID/root, and stops on another
// command. The file is removed at stop, whatever the agent said.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { unsuitableError } from '../../protocol/errors';
import { pidAlive } from '../../sys/proc/processes';
import { namespacePid } from '../../sys/jvm/attach';
import type { ResultOf, TracerName } from '../../protocol/protocol';
import type { Session, SessionEvents, TracerEnv } from '../tracer';
import { agentCommand } from './agent';

export interface AgentPartSpec {
  pid: number;
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
  /** reads what the agent appended since the last read */
  read(): void;
  /** stops the part in the JVM (if it still runs), reads the rest and removes the file */
  stop(): Promise<void>;
}

export async function startAgentPart(spec: AgentPartSpec, env: TracerEnv): Promise<AgentPart> {
  const { pid, libInTarget, label } = spec;
  const outName = `.ebpf-studio-${label.replace(/^java-/, '')}-${namespacePid(pid)}-${crypto.randomBytes(4).toString('hex')}.txt`;
  const outInTarget = `/tmp/${outName}`;
  const outHost = `/proc/${pid}/root/tmp/${outName}`;
  const code = await agentCommand(pid, libInTarget, spec.startCommand(outInTarget), 15000);
  if (code !== 0) {
    fs.rmSync(outHost, { force: true });
    throw unsuitableError(spec.startFailure(code));
  }
  let offset = 0;
  let stopped = false;
  const read = () => {
    let fd: number;
    try {
      fd = fs.openSync(outHost, 'r');
    } catch {
      return;
    }
    try {
      const buf = Buffer.alloc(1 << 20);
      for (;;) {
        const got = fs.readSync(fd, buf, 0, buf.length, offset);
        if (got <= 0) break;
        offset += got;
        spec.feed(buf.subarray(0, got).toString(spec.encoding));
      }
    } finally {
      fs.closeSync(fd);
    }
  };
  return {
    read,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (pidAlive(pid)) {
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
        env.log(`${label}: reading ${outHost} failed: ${(e as Error).message}`);
      }
      fs.rmSync(outHost, { force: true });
    },
  };
}

export interface AgentPartSessionSpec<N extends TracerName> {
  pid: number;
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
  const { pid, label } = spec;
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
    if (!pidAlive(pid)) {
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
