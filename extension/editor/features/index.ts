// Every feature module, one line each.
import type * as vscode from 'vscode';
import * as doctor from './doctor';
import * as javaGc from './javaGc';
import * as memleak from './memleak/memleak';
import * as javaHeapLeaks from './memleak/javaHeapLeaks';
import * as profile from './profile/profile';
import * as histograms from './histograms';
import * as bpfLanguage from './bpf/bpfLanguage';
import * as bpfBuild from './bpf/bpfBuild';
import * as bpfVerify from './bpf/bpfVerify';
import * as bpfRun from './bpf/bpfRun';
import * as sessionsView from '../sessions/sessionsView';
import * as sessionEditors from '../sessions/sessionEditors';
import * as jvmTimeline from './jvmTimeline';
import * as installHelper from './installHelper';
import * as profileDiff from './profile/profileDiff';
import * as profileUrl from './profile/profileUrl';
import * as bpfNewProject from './bpf/bpfNewProject';
import * as bpfLoaderRun from './bpf/bpfLoaderRun';
import * as bpftraceRun from './bpf/bpftraceRun';
import * as welcome from './welcome';
import * as jfrEditor from './jfr/jfrEditor';
import * as latency from './latency';

export const features: { activate(context: vscode.ExtensionContext): void }[] = [doctor, javaGc, memleak, javaHeapLeaks, profile, histograms, bpfLanguage, bpfBuild, bpfVerify, bpfRun, jvmTimeline, installHelper, profileDiff, profileUrl, bpfNewProject, bpfLoaderRun, bpftraceRun, sessionsView, sessionEditors, welcome, jfrEditor, latency];
