// The open conversation: its messages on screen, and one streamed answer at a time. Stopping
// aborts the fetch; the closed connection makes the server abort the request.
import { streamChat } from "./api.js";
import { copyText, renderMessageBody } from "./render.js";
import { loadSettings, samplingFields, saveConversation } from "./store.js";

export const state = {
  conversation: null,
  model: null, // the id /v1/models gave, sent with every request
  controller: null, // the AbortController of the answer being streamed
};

const hooks = { onBusy: () => {}, onSaved: () => {}, onError: () => {}, onUnauthorized: () => {} };

export function setHooks(h) {
  Object.assign(hooks, h);
}

const messagesEl = () => document.getElementById("messages");

export function busy() {
  return state.controller !== null;
}

export function stop() {
  state.controller?.abort();
}

// Stops the answer being streamed, if any, and waits until it is saved: before the page
// switches to or deletes a conversation, so that the answer never lands in the wrong one.
let running = Promise.resolve();
export async function stopAndWait() {
  stop();
  await running;
}

function button(label, aria, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.setAttribute("aria-label", aria);
  b.addEventListener("click", onClick);
  return b;
}

function statsLine(message) {
  const s = message.stats;
  if (!s || (message.error && !s.tokens)) return ""; // the error says it all
  const parts = [];
  if (message.model) parts.push(message.model);
  if (s.tokens != null) parts.push(`${s.approximate ? "≈" : ""}${s.tokens} tokens`);
  if (s.tokensPerSecond != null) parts.push(`${s.tokensPerSecond.toFixed(1)} tokens/s`);
  if (s.ttftMs != null) parts.push(`${Math.round(s.ttftMs)} ms to first token`);
  if (message.stopped) parts.push("stopped");
  else if (s.finishReason === "length") parts.push("cut at max tokens");
  return parts.join(" · ");
}

function messageActions(message, index) {
  const actions = document.createElement("div");
  actions.className = "actions";
  const last = index === state.conversation.messages.length - 1;
  if (message.role === "user") {
    actions.append(button("Edit", "Edit this message and send it again", () => startEdit(index)));
  } else {
    actions.append(button("Copy", "Copy this answer", (e) => copyText(message.content, e.target)));
    if (last) actions.append(button("Regenerate", "Regenerate this answer", regenerate));
  }
  return actions;
}

function messageElement(message, index) {
  const article = document.createElement("article");
  article.className = `message ${message.role}`;
  article.setAttribute("aria-label", message.role === "user" ? "Your message" : "Answer");
  const body = document.createElement("div");
  body.className = "body";
  renderMessageBody(body, message);
  article.append(body);
  const stats = statsLine(message);
  if (stats) {
    const p = document.createElement("p");
    p.className = "stats";
    p.textContent = stats;
    article.append(p);
  }
  if (message.error) {
    const p = document.createElement("p");
    p.className = "message-error";
    p.textContent = message.error;
    article.append(p);
  }
  article.append(messageActions(message, index));
  return article;
}

export function renderConversation() {
  const el = messagesEl();
  const messages = state.conversation?.messages ?? [];
  const hint = document.getElementById("empty-hint");
  hint.hidden = messages.length > 0;
  el.replaceChildren(hint, ...messages.map(messageElement));
  for (const b of el.querySelectorAll(".actions button")) b.disabled = busy();
  el.scrollTop = el.scrollHeight;
}

async function persist() {
  const c = state.conversation;
  c.updated = Date.now();
  await saveConversation(c);
  hooks.onSaved(c);
}

function startEdit(index) {
  if (busy()) return;
  const article = messagesEl().querySelectorAll("article.message")[index];
  const message = state.conversation.messages[index];
  const area = document.createElement("textarea");
  area.value = message.content;
  area.rows = Math.min(12, message.content.split("\n").length + 1);
  area.setAttribute("aria-label", "Edited message");
  const send = button("Send", "Send the edited message", () => {
    if (!area.value.trim()) return;
    state.conversation.messages.splice(index);
    sendUserMessage(area.value);
  });
  send.classList.add("primary");
  const cancel = button("Cancel", "Cancel the edit", renderConversation);
  const actions = document.createElement("div");
  actions.className = "actions";
  actions.append(send, cancel);
  article.replaceChildren(area, actions);
  area.focus();
}

async function regenerate() {
  if (busy()) return;
  const messages = state.conversation.messages;
  if (messages.at(-1)?.role === "assistant") messages.pop();
  await generate();
}

// Appends the user's message to the open conversation and streams the answer.
export async function sendUserMessage(text) {
  state.conversation.messages.push({ role: "user", content: text });
  if (state.conversation.messages.length === 1) state.conversation.title = text.trim().slice(0, 60);
  await generate();
}

function requestBody(settings) {
  const messages = [];
  if (settings.system.trim()) messages.push({ role: "system", content: settings.system });
  for (const m of state.conversation.messages) {
    if (m.role === "assistant" && !m.content) continue; // a failed or empty answer
    messages.push({ role: m.role, content: m.content });
  }
  const body = { messages, stream: true, stream_options: { include_usage: true } };
  if (state.model) body.model = state.model;
  return { ...body, ...samplingFields(settings) };
}

// Tool-call deltas arrive in pieces keyed by index: the name once, the arguments in parts.
function mergeToolCalls(message, deltas) {
  message.tool_calls ??= [];
  for (const d of deltas) {
    const call = (message.tool_calls[d.index ?? 0] ??= { id: d.id, type: "function", function: { name: "", arguments: "" } });
    if (d.function?.name) call.function.name += d.function.name;
    if (d.function?.arguments) call.function.arguments += d.function.arguments;
  }
}

// Fills `answer` from the stream and `t` with its timing (kept when the stream is stopped).
async function streamInto(answer, body, signal, onDelta, t) {
  for await (const chunk of streamChat(body, signal)) {
    if (chunk.usage) t.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    const d = choice.delta ?? {};
    const text = d.content ?? "";
    const reasoning = d.reasoning_content ?? d.reasoning ?? "";
    if (text || reasoning || d.tool_calls) {
      t.first ??= performance.now();
      t.chunks += 1;
    }
    answer.content += text;
    if (reasoning) answer.reasoning = (answer.reasoning ?? "") + reasoning;
    if (d.tool_calls) mergeToolCalls(answer, d.tool_calls);
    if (choice.finish_reason) t.finish = choice.finish_reason;
    onDelta();
  }
}

function answerStats(t, end) {
  const tokens = t.usage?.completion_tokens ?? t.chunks;
  const decodeSeconds = t.first === null ? 0 : (end - t.first) / 1000;
  return {
    tokens,
    approximate: !t.usage,
    ttftMs: t.first === null ? null : t.first - t.start,
    tokensPerSecond: tokens > 1 && decodeSeconds > 0 ? (tokens - 1) / decodeSeconds : null,
    finishReason: t.finish,
  };
}

function generate() {
  running = streamAnswer();
  return running;
}

async function streamAnswer() {
  let body;
  try {
    body = requestBody(loadSettings());
  } catch (e) {
    hooks.onError(`Settings: ${e.message}`);
    return;
  }
  const answer = { role: "assistant", content: "", model: state.model };
  state.conversation.messages.push(answer);
  state.controller = new AbortController();
  hooks.onBusy(true);
  await persist();
  renderConversation();
  const bodyEl = messagesEl().querySelector("article.message:last-of-type .body");
  let pending = false;
  const onDelta = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      renderMessageBody(bodyEl, answer);
      messagesEl().scrollTop = messagesEl().scrollHeight;
    });
  };
  const timing = { start: performance.now(), first: null, chunks: 0, usage: null, finish: null };
  try {
    await streamInto(answer, body, state.controller.signal, onDelta, timing);
  } catch (e) {
    if (e.name === "AbortError") answer.stopped = true;
    else answer.error = e.message;
    if (e.status === 401) hooks.onUnauthorized(e.message);
  }
  answer.stats = answerStats(timing, performance.now());
  state.controller = null;
  hooks.onBusy(false);
  await persist();
  renderConversation();
}
