#!/usr/bin/env node
// The `agentlet-resources` executable: runs one command with this process's arguments and environment.
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2), process.env, {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
});
