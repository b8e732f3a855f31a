// What Profile CPU remembers per workspace (workspaceState) so it asks fewer questions: the last
// target (kind, pid and name, so a restarted JVM with the same main class comes first again),
// the frequency and the duration. The settings ebpfStudio.profile.frequency and .duration,
// when the user set them, win and are never asked; otherwise the last answers, else the
// defaults (99 Hz, until Stop) are used without asking, as async-profiler and IntelliJ start:
// the target list always shows them as one "Sampling: … change…" item.
import type * as vscode from 'vscode';
import { PROFILE_DEFAULT_FREQUENCY, PROFILE_MAX_FREQUENCY } from '../../../protocol/profile';

export const LAST_KEY = 'ebpfStudio.profile.last';

export type TargetKind = 'system' | 'jvm' | 'process';

export interface LastTarget {
  kind: TargetKind;
  pid: number;
  /** JVM main class or process comm: matched when the pid changed (a restarted program) */
  name: string;
}

export interface LastChoices {
  target?: LastTarget;
  frequency?: number;
  /** seconds; 0 = until Stop */
  durationS?: number;
}

type Config = Pick<vscode.WorkspaceConfiguration, 'get'> & Partial<Pick<vscode.WorkspaceConfiguration, 'inspect'>>;

/** The value the user set (any scope), or undefined when only the default applies. */
function userSetting(cfg: Config, key: string): number | undefined {
  const i = cfg.inspect?.<number>(key);
  const v = i ? (i.workspaceFolderValue ?? i.workspaceValue ?? i.globalValue) : undefined;
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export function validFrequency(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= PROFILE_MAX_FREQUENCY ? v : undefined;
}

export function validDuration(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 7 * 24 * 3600 ? v : undefined;
}

export type ValueSource = 'setting' | 'last' | 'default';

export interface SamplingPlan {
  /** what a run uses without asking: a setting, the remembered answer, else the default */
  frequency: number;
  durationS: number;
  /** defaults to offer when asking */
  defaultFrequency: number;
  defaultDurationS: number;
  /** where each value came from, for the "Change…" item's description */
  frequencyFrom: ValueSource;
  durationFrom: ValueSource;
}

/** Settings the user set win; then this workspace's last answers; else the defaults: nothing is asked before a run. */
export function samplingPlan(cfg: Config, last: LastChoices): SamplingPlan {
  const setF = validFrequency(userSetting(cfg, 'frequency'));
  const setD = validDuration(userSetting(cfg, 'duration'));
  const lastF = validFrequency(last.frequency);
  const lastD = validDuration(last.durationS);
  const defaultFrequency = validFrequency(cfg.get<number>('frequency')) ?? PROFILE_DEFAULT_FREQUENCY;
  const defaultDurationS = validDuration(cfg.get<number>('duration')) ?? 0;
  return {
    frequency: setF ?? lastF ?? defaultFrequency,
    durationS: setD ?? lastD ?? defaultDurationS,
    frequencyFrom: setF !== undefined ? 'setting' : lastF !== undefined ? 'last' : 'default',
    durationFrom: setD !== undefined ? 'setting' : lastD !== undefined ? 'last' : 'default',
    defaultFrequency,
    defaultDurationS,
  };
}

export function describeSampling(frequency: number, durationS: number): string {
  return `${frequency} Hz, ${durationS > 0 ? `${durationS} s` : 'until Stop'}`;
}

export function loadLast(state: vscode.Memento): LastChoices {
  const v = state.get<LastChoices>(LAST_KEY);
  return v && typeof v === 'object' ? v : {};
}

export async function saveLast(state: vscode.Memento, choices: LastChoices): Promise<void> {
  await state.update(LAST_KEY, { ...loadLast(state), ...choices });
}
