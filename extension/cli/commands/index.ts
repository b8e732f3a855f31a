// Every CLI command. Add one line per command.
import type { Command } from '../command';
import { doctorCommand } from './doctor';
import { selftestCommand } from './selftest';

export const commands: Command[] = [doctorCommand, selftestCommand];
