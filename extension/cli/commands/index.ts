// Every CLI command. Add one line per command.
import type { Command } from '../command';
import { doctorCommand } from './doctor';
import { selftestCommand } from './selftest';
import { buildCommand } from './build';
import { verifyCommand } from './verify';
import { runqlatCommand } from './runqlat';
import { javaGcCommand } from './javaGc';
import { memleakCommand } from './memleak';
import { profileCommand } from './profile';
import { jvmCommand } from './jvm';

export const commands: Command[] = [doctorCommand, selftestCommand, runqlatCommand, javaGcCommand, memleakCommand, profileCommand, buildCommand, verifyCommand, jvmCommand];
