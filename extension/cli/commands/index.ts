// Every CLI command. Add one line per command.
import type { Command } from '../command';
import { doctorCommand } from './doctor';
import { selftestCommand } from './selftest';
import { buildCommand } from './build';
import { verifyCommand } from './verify';
import { runqlatCommand } from './runqlat';
import { biolatencyCommand } from './biolatency';
import { cpudistCommand } from './cpudist';
import { tcplatCommand } from './tcplat';
import { javaGcCommand } from './javaGc';
import { memleakCommand } from './memleak';
import { profileCommand } from './profile';
import { jvmCommand } from './jvm';
import { installHelperCommand } from './installHelper';
import { profileDiffCommand } from './profileDiff';
import { newProjectCommand } from './newProject';
import { agentCommand } from './agent';

export const commands: Command[] = [doctorCommand, selftestCommand, runqlatCommand, biolatencyCommand, cpudistCommand, tcplatCommand, javaGcCommand, memleakCommand, profileCommand, buildCommand, verifyCommand, jvmCommand, installHelperCommand, profileDiffCommand, newProjectCommand, agentCommand];
