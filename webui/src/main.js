// Wires the page: the conversation list, the composer, the settings and API-key dialogs, and
// the model name and server load in the header.
import "./style.css";
import { apiKey, fetchLoad, fetchModels, setApiKey } from "./api.js";
import { busy, renderConversation, sendUserMessage, setHooks, state, stop, stopAndWait } from "./chat.js";
import {
  DEFAULT_SETTINGS,
  deleteConversation,
  exportJson,
  getConversation,
  importJson,
  listConversations,
  loadSettings,
  newId,
  samplingFields,
  saveConversation,
  saveSettings,
} from "./store.js";

const $ = (id) => document.getElementById(id);
const CURRENT_KEY = "pagedllm.current";

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

function setBusy(on) {
  $("send").hidden = on;
  $("stop").hidden = !on;
  // Screen readers read the answer once it is whole, not at every streamed piece.
  $("messages").setAttribute("aria-busy", String(on));
  if (on) showError("");
  else $("prompt").focus();
}

// --- Conversations -------------------------------------------------------------------------

function blankConversation() {
  const now = Date.now();
  return { id: newId(), title: "New chat", created: now, updated: now, messages: [] };
}

async function openConversation(id) {
  await stopAndWait();
  state.conversation = (id && (await getConversation(id))) || blankConversation();
  localStorage.setItem(CURRENT_KEY, state.conversation.id);
  renderConversation();
  await renderList();
  document.body.classList.remove("sidebar-open");
}

function listItem(c) {
  const li = document.createElement("li");
  const open = document.createElement("button");
  open.type = "button";
  open.className = "conversation";
  open.textContent = c.title || "Untitled";
  if (c.id === state.conversation?.id) open.setAttribute("aria-current", "page");
  open.addEventListener("click", () => openConversation(c.id));
  const rename = document.createElement("button");
  rename.type = "button";
  rename.className = "icon";
  rename.textContent = "✎";
  rename.setAttribute("aria-label", `Rename ${c.title}`);
  rename.addEventListener("click", () => renameConversation(c));
  const remove = document.createElement("button");
  remove.type = "button";
  remove.className = "icon";
  remove.textContent = "✕";
  remove.setAttribute("aria-label", `Delete ${c.title}`);
  remove.addEventListener("click", () => removeConversation(c));
  li.append(open, rename, remove);
  return li;
}

async function renderList() {
  const all = await listConversations();
  $("conversation-list").replaceChildren(...all.map(listItem));
}

async function renameConversation(c) {
  const title = window.prompt("New name of the conversation", c.title);
  if (!title?.trim()) return;
  c.title = title.trim().slice(0, 200);
  await saveConversation(c);
  if (state.conversation?.id === c.id) state.conversation.title = c.title;
  await renderList();
}

async function removeConversation(c) {
  if (!window.confirm(`Delete "${c.title}"?`)) return;
  if (state.conversation?.id === c.id) await stopAndWait();
  await deleteConversation(c.id);
  if (state.conversation?.id === c.id) await openConversation(null);
  else await renderList();
}

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

async function importFile(file) {
  try {
    const added = await importJson(await file.text());
    showError(added ? "" : "The file held no conversation to import.");
    await renderList();
  } catch (e) {
    showError(`Import failed: ${e.message}`);
  }
}

// --- Model, server load and API key --------------------------------------------------------

async function loadModel() {
  try {
    const models = await fetchModels();
    state.model = models[0]?.id ?? null;
    $("model-name").textContent = state.model ?? "no model";
    document.title = `${state.model ?? "pagedllm"} · pagedllm chat`;
    showError("");
  } catch (e) {
    if (e.status === 401) {
      askForKey(apiKey() ? "The server refused this API key." : "This server needs an API key (pagedllm serve --api-key).");
    }
    else showError(e.message);
  }
}

function askForKey(reason) {
  $("key-reason").textContent = `${reason} It is kept in this browser.`;
  $("key-input").value = "";
  if (!$("key-dialog").open) $("key-dialog").showModal();
}

async function pollLoad() {
  if (document.hidden) return;
  const load = await fetchLoad().catch(() => null);
  if (!load || load.running === null) {
    $("server-load").textContent = "";
    return;
  }
  const kv = load.kvUsage === null ? "" : ` · KV cache ${Math.round(load.kvUsage * 100)}%`;
  $("server-load").textContent = `${load.running} running · ${load.waiting ?? 0} waiting${kv}`;
}

// --- Settings ------------------------------------------------------------------------------

function fillSettings(settings) {
  for (const name of Object.keys(DEFAULT_SETTINGS)) {
    const field = $("settings-form").elements[name];
    if (field) field.value = settings[name];
  }
}

function readSettings() {
  const out = {};
  for (const name of Object.keys(DEFAULT_SETTINGS)) out[name] = $("settings-form").elements[name].value;
  return out;
}

function onSettingsSubmit(e) {
  if (e.submitter?.value !== "save") return;
  e.preventDefault();
  const settings = readSettings();
  try {
    samplingFields(settings);
  } catch (err) {
    $("settings-error").textContent = err instanceof SyntaxError ? `Extra request fields: ${err.message}` : err.message;
    $("settings-error").hidden = false;
    return;
  }
  saveSettings(settings);
  $("settings-dialog").close("save");
}

// --- Wiring --------------------------------------------------------------------------------

async function onSend(e) {
  e.preventDefault();
  const text = $("prompt").value;
  if (!text.trim() || busy()) return;
  $("prompt").value = "";
  await sendUserMessage(text);
}

function wireComposer() {
  $("composer").addEventListener("submit", onSend);
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", stop);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && busy()) {
      e.preventDefault();
      stop();
    }
  });
}

function wireSidebar() {
  $("new-chat").addEventListener("click", () => openConversation(null));
  $("open-sidebar").addEventListener("click", () => document.body.classList.add("sidebar-open"));
  $("close-sidebar").addEventListener("click", () => document.body.classList.remove("sidebar-open"));
  $("export").addEventListener("click", async () => download("pagedllm-conversations.json", await exportJson()));
  $("import").addEventListener("click", () => $("import-file").click());
  $("import-file").addEventListener("change", (e) => {
    const file = e.target.files?.[0];
    e.target.value = "";
    if (file) importFile(file);
  });
}

function wireDialogs() {
  $("open-settings").addEventListener("click", () => {
    fillSettings(loadSettings());
    $("settings-error").hidden = true;
    $("settings-dialog").showModal();
  });
  $("settings-form").addEventListener("submit", onSettingsSubmit);
  $("reset-settings").addEventListener("click", () => fillSettings(DEFAULT_SETTINGS));
  $("forget-key").addEventListener("click", () => {
    setApiKey("");
    $("settings-dialog").close();
    loadModel();
  });
  // Escape closes the key dialog without a key: say why nothing will work.
  $("key-dialog").addEventListener("cancel", () => showError("Without the server's API key the page cannot talk to it."));
  $("key-form").addEventListener("submit", () => {
    setApiKey($("key-input").value.trim());
    loadModel();
  });
}

async function main() {
  setHooks({
    onBusy: (on) => {
      setBusy(on);
      pollLoad();
    },
    onSaved: () => renderList(),
    onError: showError,
    onUnauthorized: (message) => askForKey(message),
  });
  wireComposer();
  wireSidebar();
  wireDialogs();
  await loadModel();
  await openConversation(localStorage.getItem(CURRENT_KEY));
  pollLoad();
  setInterval(pollLoad, 5000);
  $("prompt").focus();
}

main();
