// The Vercel AI SDK's pruneMessages, run live as a ctxlab.policy/1 policy.
//
//     npm install ai@7.0.173
//     lab replay SESSION --policy exec:'node examples/policies/ai_sdk_prune_messages.mjs'
//
// (with the package where Node resolves it, or AI_SDK_NODE_MODULES naming a
// node_modules directory that holds it). Each model call, the history is
// turned into AI SDK model messages (tool results in `tool` messages, text
// beside them in a `user` message of its own, thinking as `reasoning`
// parts), pruned with the options of the built-in port
// `vercel-prune-messages`, and turned back: every part and message is tagged
// with where it came from, so the request is the history minus what
// pruneMessages removed, byte for byte.
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import path from "node:path";

const PROTOCOL = "ctxlab.policy/1";
const OPTIONS = {
  reasoning: "before-last-message",
  toolCalls: [{ type: "before-last-2-messages" }],
  emptyMessages: "remove",
};
const base = process.env.AI_SDK_NODE_MODULES
  ? path.join(process.env.AI_SDK_NODE_MODULES, "noop.js")
  : path.join(process.cwd(), "noop.js");
const { pruneMessages } = createRequire(base)("ai");

function part(block, b, names) {
  switch (block.type) {
    case "thinking":
      return { type: "reasoning", text: block.thinking, _b: b };
    case "tool_use":
      names.set(block.id, block.name);
      return { type: "tool-call", toolCallId: block.id, toolName: block.name, input: block.input, _b: b };
    case "tool_result":
      return { type: "tool-result", toolCallId: block.tool_use_id, toolName: names.get(block.tool_use_id), output: { type: "text", value: block.content }, _b: b };
    default:
      return { type: "text", text: block.text ?? "", _b: b };
  }
}

function toModel(history) {
  const names = new Map();
  const out = [];
  history.forEach((m, i) => {
    const blocks = Array.isArray(m.content) ? m.content : null;
    const parts = blocks && blocks.map((blk, b) => part(blk, b, names));
    if (m.role === "assistant" || !blocks || !blocks.some((blk) => blk.type === "tool_result")) {
      out.push({ role: m.role, content: parts ?? m.content, _src: i, _kind: "plain" });
      return;
    }
    out.push({ role: "tool", content: parts.filter((p) => p.type === "tool-result"), _src: i, _kind: "tool" });
    const beside = parts.filter((p) => p.type !== "tool-result");
    if (beside.length) out.push({ role: "user", content: beside, _src: i, _kind: "beside" });
  });
  return out;
}

function fromModel(models, history) {
  const out = [];
  let prevTool = false;
  for (const m of models) {
    const src = history[m._src];
    const content = typeof m.content === "string" ? m.content : m.content.map((p) => src.content[p._b]);
    if (prevTool && m._kind === "beside") {
      out[out.length - 1].content.push(...content);
      prevTool = false;
      continue;
    }
    prevTool = m._kind === "tool";
    out.push({ ...src, content });
  }
  return out;
}

function prepare(history) {
  const models = toModel(history);
  const results = models.reduce((n, m) => n + (m._kind === "tool" ? m.content.length : 0), 0);
  const pruned = pruneMessages({ messages: models, ...OPTIONS });
  const left = pruned.reduce((n, m) => n + (m._kind === "tool" ? m.content.length : 0), 0);
  const request = fromModel(pruned, history);
  const events = [];
  if (results > left || pruned.length < models.length) {
    events.push({ event: "dropped", messages: models.length - pruned.length, why: `pruneMessages removed ${results - left} tool results with their calls` });
  }
  return { request, events };
}

let history = [];
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const msg = JSON.parse(line);
  let answer;
  if (msg.type === "hello") {
    answer = { protocol: PROTOCOL, summary: "Vercel AI SDK pruneMessages (live)", constants: OPTIONS };
  } else {
    history = history.slice(0, msg.keep).concat(msg.append);
    answer = { id: msg.id, ...prepare(history) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
