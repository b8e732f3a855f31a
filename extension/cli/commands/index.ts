// Every CLI command. Add one line per command.
import type { Command } from '../command';
import { doctorCommand } from './doctor';
import { selftestCommand } from './selftest';
import { runqlatCommand } from './runqlat';
import { javaGcCommand } from './javaGc';

export const commands: Command[] = [doctorCommand, selftestCommand, runqlatCommand, javaGcCommand];
