// Generates expected.json: what Gemini CLI's own ToolOutputMaskingService
// (google-gemini/gemini-cli@00b731958a3b, where no published package matches)
// does to the histories built below. Not run by CI.
//
// Usage (installs outside the repository; GEMINI_REPO is a clone of
// google-gemini/gemini-cli holding that commit):
//   mkdir -p /tmp/gmask-env && cd /tmp/gmask-env && npm init -y >/dev/null
//   npm install --ignore-scripts typescript@5
//   GEMINI_REPO=/path/to/gemini-cli NODE_PATH=/tmp/gmask-env/node_modules \
//     node tests/golden/gemini-cli-mask/generate.mjs > tests/golden/gemini-cli-mask/expected.json
//
// The service and the token estimator are upstream's own files, transpiled
// as they are; only their logging and telemetry imports are stubbed, and
// `sanitizeFilenamePart` and `SHELL_TOOL_NAME` are cut from upstream's files.
// The histories and the digest are rebuilt identically by
// lab/zoo/gemini_cli_mask/tests.rs: long texts are compared by
// length, FNV-1a 64 of their UTF-8 bytes, and their first and last 200
// characters; the temporary directory becomes {ROOT} and each file name's
// random suffix {R}.

import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const COMMIT = '00b731958a3b583218743b03591e7596d8fb4506';
const repo = process.env.GEMINI_REPO;
if (!repo) throw new Error('set GEMINI_REPO to a clone of google-gemini/gemini-cli');
const require = createRequire(path.join(process.env.NODE_PATH ?? '.', 'x.js'));
const ts = require('typescript');
const show = (p) =>
  execFileSync('git', ['--git-dir', repo, 'show', `${COMMIT}:packages/core/src/${p}`], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });

// Lay out upstream's modules in a temporary tree, transpiled.
const lib = fs.mkdtempSync(path.join(os.tmpdir(), 'gmask-lib-'));
const put = (p, text) => {
  fs.mkdirSync(path.dirname(path.join(lib, p)), { recursive: true });
  fs.writeFileSync(path.join(lib, p), text);
};
const js = (src) =>
  ts.transpileModule(src, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
put('package.json', '{"type":"module"}');
put('services/toolOutputMaskingService.js', js(show('services/toolOutputMaskingService.ts')));
put('utils/tokenCalculation.js', js(show('utils/tokenCalculation.ts')));
put('utils/debugLogger.js', 'export const debugLogger = { debug() {}, log() {}, warn() {}, error() {} };');
const sanitize = show('utils/fileUtils.ts').match(/export function sanitizeFilenamePart[\s\S]*?\n}\n/)[0];
put('utils/fileUtils.js', js(sanitize));
const shellName = show('tools/tool-names.ts').match(/export const SHELL_TOOL_NAME = .*\n/)[0];
put('tools/tool-names.js', shellName);
put('telemetry/loggers.js', 'export function logToolOutputMasking() {}');
put('telemetry/types.js', 'export class ToolOutputMaskingEvent { constructor(x) { Object.assign(this, x); } }');
const { ToolOutputMaskingService, DEFAULT_TOOL_PROTECTION_THRESHOLD, DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD } =
  await import(path.join(lib, 'services/toolOutputMaskingService.js'));

const lines = (tag, n) => {
  let s = '';
  for (let i = 0; i < n; i++) s += `${tag} line ${String(i).padStart(5, '0')} ${'x'.repeat(36)}\n`;
  return s;
};
const OUT = {
  1: 'ok',
  2: `Output: ${lines('s2', 2000)}Error: (none)\nExit Code: 1\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242`,
  3: `héllo wörld ✓ 😀\n${lines('r3', 1200)}`,
  4: lines('r4', 3000),
  5: lines('r5', 2400),
};
const call = (id, name) => ({ role: 'model', parts: [{ functionCall: { id, name, args: {} } }] });
const resp = (id, name, k) => ({
  role: 'user',
  parts: [{ functionResponse: { id, name, response: { output: OUT[k] } } }],
});
const user = (text) => ({ role: 'user', parts: [{ text }] });
const model = (text) => ({ role: 'model', parts: [{ text }] });

// A: r5 is protected, r4 crosses the boundary; r4, r3, r2 are masked and r1
// is written but kept (its snippet would be longer).
function historyA() {
  return [
    user('fix the parser'),
    call('c1', 'read_file'),
    resp('c1', 'read_file', 1),
    call('c2', 'run_shell_command'),
    resp('c2', 'run_shell_command', 2),
    model('tests ran'),
    user('go on'),
    call('c3', 'read_file'),
    resp('c3', 'read_file', 3),
    call('c4', 'grep'),
    resp('c4', 'grep', 4),
    call('c5', 'read_file'),
    resp('c5', 'read_file', 5),
    call('c6', 'read_file'),
  ];
}

// B: r3 is prunable but under the batch threshold: nothing changes.
function historyB() {
  return [user('fix the parser'), call('c3', 'read_file'), resp('c3', 'read_file', 3), call('c4', 'grep'), resp('c4', 'grep', 4), call('c6', 'read_file')];
}

function fnv(s) {
  let h = 0xcbf29ce484222325n;
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, '0');
}

const normal = (s, tmp) => s.split(tmp).join('{ROOT}').replace(/_([a-z0-9]*)\.txt/g, '_{R}.txt');
const digest = (s, tmp) => {
  const t = normal(s, tmp);
  return { len: [...t].length, fnv: fnv(t), head: [...t].slice(0, 200).join(''), tail: [...t].slice(-200).join('') };
};

async function run(history) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gmask-golden-'));
  const config = {
    getToolOutputMaskingConfig: () => ({
      enabled: true,
      toolProtectionThreshold: DEFAULT_TOOL_PROTECTION_THRESHOLD,
      minPrunableTokensThreshold: DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD,
      protectLatestTurn: true,
    }),
    storage: { getHistoryDir: () => tmp },
  };
  const { newHistory, maskedCount } = await new ToolOutputMaskingService().mask(history, config);
  const parts = newHistory.map((c) => ({
    role: c.role,
    parts: c.parts.map((p) =>
      p.functionResponse
        ? { functionResponse: { id: p.functionResponse.id, output: digest(p.functionResponse.response.output, tmp) } }
        : p.functionCall
          ? { functionCall: p.functionCall.id }
          : { text: p.text },
    ),
  }));
  const dir = path.join(tmp, 'tool-outputs');
  const files = fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .map((f) => ({
          name: normal(f, tmp),
          // The file holds JSON.stringify(response, null, 2); the lab keeps the output itself.
          output: digest(JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')).output, tmp),
        }))
        .sort((a, b) => (a.name < b.name ? -1 : 1))
    : [];
  return { maskedCount, history: parts, files };
}

console.log(
  JSON.stringify({ upstream: `google-gemini/gemini-cli@${COMMIT}`, A: await run(historyA()), B: await run(historyB()) }, null, 1),
);
