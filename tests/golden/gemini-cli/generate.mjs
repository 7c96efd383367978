// Generates expected.json: what Gemini CLI's own ChatCompressionService does
// to the history built by history() below. Not run by CI.
//
// Usage (installs outside the repository):
//   mkdir -p /tmp/gcli-env && cd /tmp/gcli-env && npm init -y >/dev/null
//   npm install --ignore-scripts @google/gemini-cli-core@0.61.0
//   GEMINI_CORE=/tmp/gcli-env/node_modules/@google/gemini-cli-core \
//     node tests/golden/gemini-cli/generate.mjs > tests/golden/gemini-cli/expected.json
//
// The history and the digest below are rebuilt identically by
// lab/zoo/gemini_cli/tests.rs; long texts are compared by length,
// FNV-1a 64 of their UTF-8 bytes, and their first and last 200 characters.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const core = process.env.GEMINI_CORE;
if (!core) throw new Error('set GEMINI_CORE to the installed @google/gemini-cli-core');
const { ChatCompressionService } = await import(
  path.join(core, 'dist/src/context/chatCompressionService.js')
);

function output(k) {
  let s = '';
  for (let i = 0; i < 2500; i++) s += `r${k} line ${String(i).padStart(5, '0')} ${'x'.repeat(40)}\n`;
  return s;
}

const call = (id, name, args) => ({ role: 'model', parts: [{ functionCall: { id, name, args } }] });
const resp = (id, name, out) => ({
  role: 'user',
  parts: [{ functionResponse: { id, name, response: { output: out } } }],
});
const user = (text) => ({ role: 'user', parts: [{ text }] });
const model = (text) => ({ role: 'model', parts: [{ text }] });

// A: the two truncated responses fall in the summarised part.
function historyA() {
  return [
    user('fix the parser; keep the API stable'),
    call('c1', 'read_file', { path: 'src/parser.rs' }),
    resp('c1', 'read_file', output(1)),
    model('read it'),
    user('now run the tests'),
    call('c2', 'run_shell_command', { command: 'cargo test' }),
    resp('c2', 'run_shell_command', output(2)),
    model('tests ran'),
    user('summarise the failures'),
    call('c3', 'grep', { pattern: 'FAIL' }),
    resp('c3', 'grep', output(3)),
  ];
}

// B: one truncated response stays in the kept part.
function historyB() {
  return [
    user('fix the parser; keep the API stable'),
    call('c1', 'read_file', { path: 'src/parser.rs' }),
    resp('c1', 'read_file', output(1)),
    model('read it'),
    user('now run the tests'),
    call('c2', 'run_shell_command', { command: 'cargo test' }),
    resp('c2', 'run_shell_command', output(2)),
    call('c3', 'grep', { pattern: 'FAIL' }),
    resp('c3', 'grep', output(3)),
  ];
}

function fnv(s) {
  let h = 0xcbf29ce484222325n;
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, '0');
}

const digest = (s, tmp) => {
  const t = s.split(tmp).join('{ROOT}');
  return { len: [...t].length, fnv: fnv(t), head: [...t].slice(0, 200).join(''), tail: [...t].slice(-200).join('') };
};

async function run(history) {
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gcli-golden-'));
const replies = ['SUMMARY-DRAFT', '<state_snapshot>goal: fix the parser</state_snapshot>'];
let truncationId = 0;
const base = {
  getHookSystem: () => undefined,
  getCompressionThreshold: async () => undefined,
  getNextCompressionTruncationId: () => ++truncationId,
  storage: { getProjectTempDir: () => tmp },
  getTruncateToolOutputThreshold: () => 40_000,
  getBaseLlmClient: () => ({
    generateContent: async () => ({ candidates: [{ content: { parts: [{ text: replies.shift() }] } }] }),
  }),
  getContentGenerator: () => ({}),
  getIncludeDirectoryTree: () => false,
  getSessionMemory: () => '',
  getActiveModel: () => 'gemini-2.5-pro',
};
// Anything else the service asks of its config answers `undefined`; the
// prompt builder reads `config.config`, which is the config itself.
const config = new Proxy(base, {
  get(target, prop) {
    if (prop === 'config') return config;
    if (prop in target || prop === 'then' || typeof prop === 'symbol') return target[prop];
    return () => undefined;
  },
});
const chat = { getHistory: () => history, getLastPromptTokenCount: () => 600_000 };
const { newHistory, info } = await new ChatCompressionService().compress(chat, 'p', true, 'gemini-2.5-pro', config, false);
const parts = (newHistory ?? []).map((c) => ({
  role: c.role,
  parts: c.parts.map((p) =>
    p.functionResponse
      ? { functionResponse: { id: p.functionResponse.id, name: p.functionResponse.name, output: digest(p.functionResponse.response.output, tmp) } }
      : p.functionCall
        ? { functionCall: p.functionCall }
        : { text: p.text },
  ),
}));
const dir = path.join(tmp, 'tool-outputs');
const files = fs.readdirSync(dir).sort().map((f) => ({ name: f, content: digest(fs.readFileSync(path.join(dir, f), 'utf8'), tmp) }));
return { status: info.compressionStatus, history: parts, files };
}

console.log(JSON.stringify({ package: '@google/gemini-cli-core@0.61.0', A: await run(historyA()), B: await run(historyB()) }, null, 1));
