// Golden fixtures for `roo-code-auto-condense`, produced by Roo Code's own
// TypeScript at RooCodeInc/Roo-Code@d1e74cb3e35bebdac3daab28919a87f643b09ec7.
//
// Not run by CI. Extracts the upstream files and bundles them with esbuild in
// a temporary directory outside the repo:
//
//     mkdir -p /tmp/roo/up && (cd /tmp/roo && npm install esbuild@0.24.0)
//     git -C <Roo-Code clone> archive d1e74cb3e35bebdac3daab28919a87f643b09ec7 \
//       src/core/condense/index.ts src/core/context-management/index.ts \
//       src/api/transform/image-cleaning.ts src/shared/array.ts src/shared/support-prompt.ts \
//       packages/types/src/providers/anthropic.ts src/i18n/locales/en/common.json | tar -x -C /tmp/roo/up
//     node tests/golden/roo_code/generate.mjs /tmp/roo/up /tmp/roo/node_modules/esbuild/lib/main.js \
//       > tests/golden/roo_code/expected.json
//
// `manageContext`, `summarizeConversation`, `getEffectiveApiHistory`,
// `getMessagesSinceLastSummary`, `truncateConversation` and the
// `ANTHROPIC_DEFAULT_MAX_TOKENS`, `CONDENSE` prompt and English error texts
// are upstream's, unchanged. Stubbed: telemetry (no-op), `t` (reads the real
// `common.json`), the API handler (a scripted summariser whose `countTokens`
// is the lab's `approx` counter: ceil(chars / 4) per text, tool name plus
// input JSON for a call, 0 for Roo's `reasoning` blocks, which the lab does
// not keep). `attemptApiRequest` of `Task.ts` is mirrored: no management on
// the first call (no usage yet), `totalTokens` such that `prevContextTokens`
// is the size of the request about to be sent, then the request is
// `getMessagesSinceLastSummary(getEffectiveApiHistory(history))` through the
// plain-reasoning branch of `buildCleanConversationHistory`.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [up, esbuildPath] = process.argv.slice(2);
const esbuild = (await import(esbuildPath)).default;
const common = JSON.parse(fs.readFileSync(path.join(up, "src/i18n/locales/en/common.json"), "utf8"));

const stubs = {
  "@roo-code/telemetry": "export const TelemetryService = { instance: new Proxy({}, { get: () => () => {} }) };",
  "../../i18n": `const j = ${JSON.stringify(common)}; export function t(k) { return k.split(":")[1].split(".").reduce((o, p) => o[p], j); }`,
  "@anthropic-ai/sdk": "export default {}; export const Anthropic = {};",
  "../../api": "export {};",
  "../index": "export {};",
  "../task-persistence/apiMessages": "export {};",
  "../../core/task-persistence/apiMessages": "export {};",
  "../ignore/RooIgnoreController": "export {};",
};
const plugin = {
  name: "stubs",
  setup(b) {
    b.onResolve({ filter: /.*/ }, (a) => {
      if (a.path === "@roo-code/types") return { path: path.join(up, "packages/types/src/providers/anthropic.ts") };
      if (a.path in stubs) return { path: a.path, namespace: "stub" };
      return undefined;
    });
    b.onLoad({ filter: /.*/, namespace: "stub" }, (a) => ({ contents: stubs[a.path], loader: "js" }));
  },
};
const built = await esbuild.build({
  stdin: {
    contents: `export { manageContext } from "./src/core/context-management/index.ts";
export { summarizeConversation, getEffectiveApiHistory, getMessagesSinceLastSummary } from "./src/core/condense/index.ts";
export { supportPrompt } from "./src/shared/support-prompt.ts";`,
    resolveDir: up,
    loader: "ts",
  },
  bundle: true,
  format: "esm",
  platform: "node",
  write: false,
  plugins: [plugin],
});
const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "roo-")), "bundle.mjs");
fs.writeFileSync(file, built.outputFiles[0].text);
const roo = await import(file);

// The lab's `approx` counter.
const count = (s) => Math.ceil([...s].length / 4);
function blockTokens(b) {
  if (b.type === "text") return count(b.text);
  if (b.type === "tool_use") return count(b.name) + count(JSON.stringify(b.input));
  if (b.type === "tool_result") return count(b.content);
  return 0;
}
const contentTokens = (c) => (Array.isArray(c) ? c.reduce((s, b) => s + blockTokens(b), 0) : count(c));
const requestTokens = (ms) => ms.reduce((s, m) => s + contentTokens(m.content), 0);

// Replies in order, the last one repeated; every reply given is recorded.
function handler(replies, sent, given = []) {
  return {
    getModel: () => ({ id: "claude-sonnet-4-5", info: { supportsImages: true } }),
    countTokens: async (blocks) => blocks.reduce((s, b) => s + blockTokens(b), 0),
    createMessage: async function* (system, messages) {
      sent.push({ system, messages });
      const text = replies.length > 1 ? replies.shift() : replies[0];
      given.push(text);
      yield { type: "text", text };
    },
  };
}

// buildCleanConversationHistory for a model without preserveReasoning.
function clean(ms) {
  return ms.map((m) => {
    const [first, ...rest] = Array.isArray(m.content) ? m.content : [];
    if (m.role === "assistant" && first && first.type === "reasoning" && typeof first.text === "string") {
      const content = rest.length === 0 ? "" : rest.length === 1 && rest[0].type === "text" ? rest[0].text : rest;
      return { role: "assistant", content };
    }
    return { role: m.role, content: m.content };
  });
}
const requestOf = (stored) => clean(roo.getMessagesSinceLastSummary(roo.getEffectiveApiHistory(stored)));

// Tags as positions: a parent is the index of the summary or marker carrying its id.
// One string per message: `user`/`assistant`, then ` summary`, ` marker`,
// ` condensed:<i>`, ` truncated:<i>` as they apply.
function tags(stored) {
  const at = (key, id) => stored.findIndex((m) => m[key] === id);
  return stored.map((m) => {
    let t = m.role;
    if (m.isSummary) t += " summary";
    if (m.isTruncationMarker) t += " marker";
    if (m.condenseParent) t += ` condensed:${at("condenseId", m.condenseParent)}`;
    if (m.truncationParent) t += ` truncated:${at("truncationId", m.truncationParent)}`;
    return t;
  });
}

let ts = 1000;
const stamp = (ms) => ms.map((m) => ({ ...m, ts: ts++ }));
const task = { role: "user", content: "task: fix the parser, keep the API stable" };
function step(k, resultChars) {
  const id = `call_${k}`;
  const out = `out ${k} `.repeat(resultChars).slice(0, resultChars);
  return [
    { role: "assistant", content: [{ type: "text", text: `step ${k}` }, { type: "tool_use", id, name: "bash", input: { cmd: `run ${k}` } }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: out }] },
  ];
}

async function replay(c) {
  const replies = [...c.replies];
  const given = [];
  let stored = [];
  const calls = [];
  for (let k = 0; k < c.calls; k++) {
    stored.push(...stamp(k === 0 ? [task] : step(k, c.result_chars)));
    const call = { error: null, messages_removed: 0, summarised: [] };
    if (k > 0) {
      const sent = [];
      const prev = requestTokens(requestOf(stored));
      const last = stored[stored.length - 1];
      const r = await roo.manageContext({
        messages: stored,
        totalTokens: prev - contentTokens(last.content),
        contextWindow: c.context_window,
        maxTokens: c.max_tokens,
        apiHandler: handler(replies, sent, given),
        autoCondenseContext: c.auto_condense_context,
        autoCondenseContextPercent: c.auto_condense_context_percent,
        systemPrompt: "",
        taskId: "golden",
        profileThresholds: c.profile_threshold === null ? {} : { p: c.profile_threshold },
        currentProfileId: "p",
      });
      stored = r.messages;
      Object.assign(call, {
        prev_tokens: r.prevContextTokens,
        error: r.error ?? null,
        messages_removed: r.messagesRemoved ?? 0,
        summarised: sent.map((s) => clean(s.messages)),
      });
    }
    // The whole request and stored tags where something happened (and at
    // the end); elsewhere the request only grew by the new messages.
    const request = requestOf(stored);
    const acted = call.error || call.messages_removed || call.summarised.length;
    if (acted || k === c.calls - 1) {
      Object.assign(call, { request, stored: tags(stored) });
    } else {
      call.request_len = request.length;
    }
    calls.push(call);
  }
  return { ...c, replies: given, steps: calls };
}

const base = {
  context_window: 300,
  max_tokens: 30,
  auto_condense_context: true,
  auto_condense_context_percent: 100,
  profile_threshold: null,
  result_chars: 40,
};
const cases = {
  // allowed = 300 * 0.9 - 30 = 240; the task is 11 tokens, a step 17.
  condense_twice: { ...base, calls: 30, replies: ["S1: parser task, steps 1-12 ran", "S2: steps 13-21 ran"] },
  percent_threshold: { ...base, auto_condense_context_percent: 50, calls: 12, replies: ["S: half"] },
  profile_threshold: { ...base, profile_threshold: 50, calls: 12, replies: ["S: half"] },
  profile_threshold_invalid: { ...base, auto_condense_context_percent: 50, profile_threshold: 3, calls: 12, replies: ["S: half"] },
  auto_condense_off: { ...base, auto_condense_context: false, calls: 30, replies: [] },
  empty_summary: { ...base, calls: 16, replies: [" \n\t ", "\n"] },
  context_grew: { ...base, calls: 16, replies: ["G".repeat(4000), "G".repeat(4000)] },
  max_tokens_unset: { ...base, context_window: 9000, max_tokens: 0, calls: 5, replies: ["S"] },
};

// Direct calls of summarizeConversation on built histories (refusals).
const summary = (text) => ({ role: "assistant", content: [{ type: "reasoning", text: "r" }, { type: "text", text }], isSummary: true, condenseId: "c1" });
const direct = {
  not_enough_messages: [task, ...step(1, 20), { role: "assistant", content: [{ type: "text", text: "done" }] }],
  summary_in_kept: [task, ...step(1, 20), summary("S"), ...step(2, 20).slice(1), { role: "user", content: "go on" }],
  summary_in_kept_short: [task, summary("S"), { role: "user", content: "a" }, { role: "assistant", content: [{ type: "text", text: "b" }] }, { role: "user", content: "c" }],
  five_messages: [task, ...step(1, 20), ...step(2, 20)],
};
const directOut = {};
for (const [name, messages] of Object.entries(direct)) {
  const sent = [];
  const r = await roo.summarizeConversation(stamp(messages), handler(["S"], sent), "", "golden", 1e9, true);
  directOut[name] = {
    messages: clean(messages),
    is_summary: messages.map((m) => !!m.isSummary),
    error: r.error ?? null,
    summarised: sent.map((s) => clean(s.messages)),
    stored: r.error ? null : tags(r.messages),
  };
}

const out = { summary_prompt: roo.supportPrompt.default.CONDENSE, cases: {}, summarize: directOut };
for (const [name, c] of Object.entries(cases)) out.cases[name] = await replay(c);
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
