// The Anthropic TypeScript SDK's own memory tool behind ctxlab.memtool/1.
//
// `BetaLocalFilesystemMemoryTool` (@anthropic-ai/sdk/tools/memory/node)
// keeps `/memories` in `<basePath>/memories`; ctxlab passes that directory
// as each request's `root`, so the SDK's base path is its parent. Each
// command goes to the SDK's handler of the same name; a thrown error is the
// tool's error text (its message), as the SDK's tool runner reports it.
//
// Installed by `scripts/memtools.sh` (NODE_PATH points at the pinned
// install); run by `lab memcheck --exec 'node examples/memtool/anthropic_sdk.mjs'`.

import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';

const require = createRequire(path.join(process.env.MEMTOOL_NODE_MODULES ?? '.', 'x.js'));
const sdk = await import(pathToFileURL(require.resolve('@anthropic-ai/sdk/tools/memory/node')).href);

let tool = null;
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const req = JSON.parse(line);
  if (tool === null) {
    tool = await sdk.BetaLocalFilesystemMemoryTool.init(path.dirname(req.root));
  }
  const answer = { id: req.id };
  try {
    const handler = tool[req.input.command];
    if (typeof handler !== 'function') throw new Error(`Unknown command: ${req.input.command}`);
    const result = await handler.call(tool, req.input);
    answer.result = typeof result === 'string' ? result : JSON.stringify(result);
  } catch (err) {
    answer.error = err instanceof Error ? err.message : String(err);
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
}
