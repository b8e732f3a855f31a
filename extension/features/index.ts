// Every feature module, one line each.
import type * as vscode from 'vscode';
import * as doctor from './doctor';
import * as javaGc from './javaGc';
import * as memleak from './memleak';
import * as profile from './profile';
import * as runqlat from './runqlat';
import * as bpfLanguage from './bpfLanguage';
import * as bpfBuild from './bpfBuild';
import * as bpfVerify from './bpfVerify';
import * as bpfRun from './bpfRun';
import * as sessionsView from './sessionsView';
import * as sessionEditors from './sessionEditors';
import * as jvmTimeline from './jvmTimeline';
import * as installHelper from './installHelper';
import * as profileDiff from './profileDiff';
import * as bpfNewProject from './bpfNewProject';
import * as bpfLoaderRun from './bpfLoaderRun';
import * as bpftraceRun from './bpftraceRun';

export const features: { activate(context: vscode.ExtensionContext): void }[] = [doctor, javaGc, memleak, profile, runqlat, bpfLanguage, bpfBuild, bpfVerify, bpfRun, jvmTimeline, installHelper, profileDiff, bpfNewProject, bpfLoaderRun, bpftraceRun, sessionsView, sessionEditors];
