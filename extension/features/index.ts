// Every feature module, one line each.
import type * as vscode from 'vscode';
import * as doctor from './doctor';

export const features: { activate(context: vscode.ExtensionContext): void }[] = [doctor];
