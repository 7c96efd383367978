// Golden fixtures for `vercel-prune-messages`, produced by the `ai` package itself.
//
// Not run by CI. Installs into a temporary directory outside the repo:
//
//     mkdir -p /tmp/ai && (cd /tmp/ai && npm install ai@7.0.173)
//     NODE_PATH=/tmp/ai/node_modules node tests/golden/vercel/generate.mjs /tmp/ai/node_modules/ai/dist/index.js > tests/golden/vercel/expected.json
//
// The scripted history is built in the lab's (Anthropic) shape, turned into AI
// SDK model messages (tool results in `tool` messages, thinking as
// `reasoning` parts), pruned with each case's options, and turned back.
const { pruneMessages } = await import(process.argv[2]);

function history() {
  const h = [{ role: "user", content: "task: fix the parser" }];
  for (let s = 0; s < 6; s++) {
    const ids = s % 3 === 2 ? [`c${s}_0`, `c${s}_1`] : [`c${s}_0`];
    const blocks = [];
    if (s % 2 === 0) blocks.push({ type: "thinking", thinking: `think ${s}` });
    blocks.push({ type: "text", text: `step ${s}` });
    ids.forEach((id, k) => blocks.push({ type: "tool_use", id, name: k ? "grep" : "bash", input: { q: s } }));
    h.push({ role: "assistant", content: blocks });
    h.push({ role: "user", content: ids.map((id) => ({ type: "tool_result", tool_use_id: id, content: `out ${id}` })) });
  }
  h.push({ role: "assistant", content: [{ type: "thinking", thinking: "last" }, { type: "text", text: "done" }] });
  h.push({ role: "user", content: "" });
  return h;
}

function toModel(h) {
  const names = {};
  const out = [];
  for (const m of h) {
    if (m.role === "assistant") {
      out.push({ role: "assistant", content: m.content.map((b) => {
        if (b.type === "thinking") return { type: "reasoning", text: b.thinking };
        if (b.type === "text") return { type: "text", text: b.text };
        names[b.id] = b.name;
        return { type: "tool-call", toolCallId: b.id, toolName: b.name, input: b.input };
      }) });
    } else if (Array.isArray(m.content)) {
      out.push({ role: "tool", content: m.content.map((b) => ({ type: "tool-result", toolCallId: b.tool_use_id, toolName: names[b.tool_use_id], output: { type: "text", value: b.content } })) });
    } else {
      out.push({ role: "user", content: m.content });
    }
  }
  return out;
}

function fromModel(ms) {
  return ms.map((m) => {
    if (m.role === "tool") {
      return { role: "user", content: m.content.map((p) => ({ type: "tool_result", tool_use_id: p.toolCallId, content: p.output.value })) };
    }
    if (m.role === "assistant") {
      return { role: "assistant", content: m.content.map((p) => {
        if (p.type === "reasoning") return { type: "thinking", thinking: p.text };
        if (p.type === "text") return { type: "text", text: p.text };
        return { type: "tool_use", id: p.toolCallId, name: p.toolName, input: p.input };
      }) };
    }
    return m;
  });
}

const cases = {
  defaults: {},
  "reasoning-all": { reasoning: "all" },
  "lab-choice": { reasoning: "before-last-message", toolCalls: "before-last-2-messages" },
  "all-tool-calls-keep-empty": { toolCalls: "all", emptyMessages: "keep" },
  "only-bash-before-last-message": { toolCalls: [{ type: "before-last-message", tools: ["bash"] }] },
};
const h = history();
const out = {};
for (const [name, opts] of Object.entries(cases)) {
  const toolCalls = typeof opts.toolCalls === "string" ? [{ type: opts.toolCalls }] : opts.toolCalls;
  out[name] = {
    options: { ...opts, toolCalls: toolCalls ?? [] },
    history: h,
    result: fromModel(pruneMessages({ messages: toModel(h), ...opts })),
  };
}
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
