// Profile CPU remembers its answers per workspace (with the `vscode` mock and a fake helper):
// every run asks only the target, the first at the defaults (99 Hz, until Stop) shown as one
// "Sampling: … change…" item, the next with the last target first (found again by main class
// after a JVM restart); settings the user set are never asked; "Sampling: … change…" asks
// frequency (common rates, "Other…" for any) and duration, and remembers them.
import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { installVscodeMock } from '../mocks/vscode';
import type { ProcessInfo } from '../../extension/protocol/protocol';

const vscode = installVscodeMock();
 
const feature = require('../../extension/editor/features/profile/profile') as typeof import('../../extension/editor/features/profile/profile');
 
const choices = require('../../extension/editor/features/profile/profileChoices') as typeof import('../../extension/editor/features/profile/profileChoices');
 
const { setHelper } = require('../../extension/editor/helperClient/helperClient') as typeof import('../../extension/editor/helperClient/helperClient');

function proc(pid: number, comm: string, main?: string): ProcessInfo {
  return {
    pid, ppid: 1, user: 'alice', uid: 1000, comm, cmdline: [comm], kernelThread: false,
    ...(main ? { jvm: { libjvm: '/jdk/lib/server/libjvm.so', usdt: true, main, javaHome: '/jdk', preserveFramePointer: true } } : {}),
  };
}

class Memento {
  private readonly m = new Map<string, unknown>();
  keys() {
    return [...this.m.keys()];
  }
  get<T>(k: string, d?: T): T | undefined {
    return this.m.has(k) ? (this.m.get(k) as T) : d;
  }
  async update(k: string, v: unknown) {
    this.m.set(k, v);
  }
}

interface Item {
  label: string;
  description?: string;
  target?: { pid: number };
  /** a process row of the shared process picker */
  process?: { pid: number };
  changeSampling?: boolean;
}
const pidOf = (i: Item | undefined) => i?.target?.pid ?? i?.process?.pid;

let processes: ProcessInfo[] = [];
let settings: Record<string, number> = {};
const asked: string[] = [];
let onPick: (title: string, items: Item[]) => Item | undefined = () => undefined;
let onInput: (title: string) => string | undefined = () => undefined;

setHelper({ request: async () => processes } as never);
const win = vscode.window as unknown as Record<string, unknown>;
win.showQuickPick = async (items: Item[], o: { title: string }) => {
  asked.push(o.title);
  return onPick(o.title, items);
};
win.showInputBox = async (o: { title: string }) => {
  asked.push(o.title);
  return onInput(o.title);
};
(vscode.workspace as unknown as Record<string, unknown>).getConfiguration = () => ({
  get: <T>(k: string, d?: T) => (k in settings ? (settings[k] as T) : d),
  inspect: (k: string) => ({ key: k, defaultValue: undefined, globalValue: settings[k] }),
});

beforeEach(() => {
  asked.length = 0;
  settings = {};
  processes = [proc(100, 'java', 'com.acme.App'), proc(200, 'nginx')];
});

describe('Profile CPU remembers choices per workspace', () => {
  test('the first run asks only the target and starts at 99 Hz until Stop; the next offers the restarted JVM first', async () => {
    const state = new Memento();
    let shown: Item[] = [];
    onPick = (title, items) => ((shown = items), title.includes('what to sample') ? items.find((i) => pidOf(i) === 100) : undefined);
    const first = await feature.askProfile(state as never);
    assert.deepEqual(asked, ['Profile CPU: what to sample'], 'one question before it starts');
    assert.equal(first?.target.pid, 100);
    assert.equal(first?.frequency, 99);
    assert.equal(first?.durationS, 0, 'until Stop');
    const options = shown.find((i) => i.changeSampling)!;
    assert.match(options.label, /Sampling: 99 Hz, until Stop/, 'the options are one click away in the same list');
    assert.match(options.description!, /defaults/);
    assert.deepEqual(state.get(choices.LAST_KEY), { target: { kind: 'jvm', pid: 100, name: 'com.acme.App' } }, 'untouched defaults are not remembered as answers');

    // The JVM restarted under a new pid; another process came first in the list.
    processes = [proc(50, 'bash'), proc(300, 'java', 'com.acme.App')];
    asked.length = 0;
    onPick = (_t, items) => ((shown = items), items[0]);
    const second = await feature.askProfile(state as never);
    assert.deepEqual(asked, ['Profile CPU: what to sample'], 'only the target is asked');
    assert.equal(pidOf(shown[0]), 300, 'the same main class comes first');
    assert.match(shown[0].description!, /last used/);
    assert.equal(second?.target.pid, 300);
    assert.equal(second?.frequency, 99);
  });

  test('"Sampling: … change…" offers common rates and Other… for any, and remembers the answers', async () => {
    const state = new Memento();
    let round = 0;
    let rates: Item[] = [];
    onPick = (title, items) => {
      if (title.includes('for how long')) return items.find((i) => i.label === '30 seconds');
      if (title.includes('samples per second')) return ((rates = items), items.find((i) => i.label === '499 Hz'));
      round++;
      return round === 1 ? items.find((i) => i.changeSampling) : items.find((i) => pidOf(i) === 200);
    };
    const r = await feature.askProfile(state as never);
    assert.deepEqual(asked, ['Profile CPU: what to sample', 'Profile CPU: what to sample', 'Profile CPU: samples per second per CPU', 'Profile CPU: for how long']);
    assert.equal(rates[0].label, '99 Hz', 'the current rate first');
    assert.ok(rates.some((i) => i.label === 'Other…'));
    assert.equal(r?.frequency, 499);
    assert.equal(r?.durationS, 30);
    assert.deepEqual(choices.loadLast(state as never), { target: { kind: 'process', pid: 200, name: 'nginx' }, frequency: 499, durationS: 30 });
    asked.length = 0;
    let shown: Item[] = [];
    onPick = (_t, items) => ((shown = items), items.find((i) => pidOf(i) === 200));
    const again = await feature.askProfile(state as never);
    assert.deepEqual(asked, ['Profile CPU: what to sample']);
    assert.equal(again?.frequency, 499);
    assert.ok(shown.some((i) => /Sampling: 499 Hz, 30 s/.test(i.label) && /remembered/.test(i.description ?? '')));
  });

  test('"Sampling: … change…" → Other… takes any rate in range', async () => {
    const state = new Memento();
    await state.update(choices.LAST_KEY, { target: { kind: 'system', pid: 0, name: '' }, frequency: 99, durationS: 0 });
    let round = 0;
    onPick = (title, items) => {
      if (title.includes('for how long')) return items.find((i) => i.label === 'Until I press Stop');
      if (title.includes('samples per second')) return items.find((i) => i.label === 'Other…');
      round++;
      return round === 1 ? items.find((i) => i.changeSampling) : items[0];
    };
    onInput = () => '499';
    const r = await feature.askProfile(state as never);
    assert.equal(r?.target.pid, 0, 'the whole system, the last target, came first');
    assert.equal(r?.frequency, 499);
    assert.equal(r?.durationS, 0);
    assert.equal(choices.loadLast(state as never).frequency, 499);
  });

  test('settings the user set are used without asking, even on the first run', async () => {
    settings = { frequency: 49, duration: 10 };
    const state = new Memento();
    let shown: Item[] = [];
    onPick = (_t, items) => ((shown = items), items.find((i) => pidOf(i) === 200));
    const r = await feature.askProfile(state as never);
    assert.deepEqual(asked, ['Profile CPU: what to sample']);
    assert.equal(r?.frequency, 49);
    assert.equal(r?.durationS, 10);
    const item = shown.find((i) => /Sampling: 49 Hz, 10 s/.test(i.label))!;
    assert.match(item.description!, /from settings/);
    assert.ok(!item.changeSampling);
  });

  test('the settings give the defaults offered when asking; cancelling saves nothing', async () => {
    const plan = choices.samplingPlan({ get: <T>(k: string) => ({ frequency: 0, duration: 5 })[k] as T }, {});
    assert.equal(plan.frequency, 99, 'an invalid frequency is ignored');
    assert.equal(plan.frequencyFrom, 'default');
    assert.equal(plan.durationS, 5);
    assert.equal(plan.defaultFrequency, 99);
    assert.equal(plan.defaultDurationS, 5);
    const state = new Memento();
    onPick = () => undefined;
    assert.equal(await feature.askProfile(state as never), undefined);
    assert.equal(state.get(choices.LAST_KEY), undefined);
  });
});
