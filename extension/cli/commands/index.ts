// Every CLI command. Add one line per command; a kit tracer's comes from its spec (tracers/kit.ts).
import type { Command } from '../command';
import { histCommand } from '../histCommand';
import { kitTracers } from '../../tracers/index';
import { HISTOGRAM_TRACERS } from '../../protocol/catalog';
import { doctorCommand } from './doctor';
import { selftestCommand } from './selftest';
import { buildCommand } from './build';
import { verifyCommand } from './verify';
import { javaGcCommand } from './javaGc';
import { memleakCommand } from './memleak';
import { profileCommand } from './profile';
import { jvmCommand } from './jvm';
import { installHelperCommand } from './installHelper';
import { profileDiffCommand } from './profileDiff';
import { newProjectCommand } from './newProject';
import { agentCommand } from './agent';
import { jfrCommand } from './jfr';
import { latencyCommand } from './latency';

export const commands: Command[] = [doctorCommand, selftestCommand, ...HISTOGRAM_TRACERS.map((n) => histCommand(kitTracers[n])), javaGcCommand, memleakCommand, profileCommand, buildCommand, verifyCommand, jvmCommand, installHelperCommand, profileDiffCommand, newProjectCommand, agentCommand, latencyCommand, jfrCommand];
