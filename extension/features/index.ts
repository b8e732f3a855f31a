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

export const features: { activate(context: vscode.ExtensionContext): void }[] = [doctor, javaGc, memleak, profile, runqlat, bpfLanguage, bpfBuild, bpfVerify, bpfRun, jvmTimeline, sessionsView, sessionEditors];
