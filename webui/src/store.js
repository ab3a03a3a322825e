// Conversations live in the browser's IndexedDB (one record each), settings in localStorage.
// A conversation: { id, title, created, updated, messages: [{ role, content, reasoning?,
// tool_calls?, stats?, error?, stopped? }] }.

const DB_NAME = "pagedllm";
const STORE = "conversations";
const EXPORT_FORMAT = "pagedllm-conversations";

let dbPromise = null;

function openDb() {
  dbPromise ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(DB_NAME, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: "id" });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  return dbPromise;
}

async function run(mode, action) {
  const db = await openDb();
  return new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, mode);
    const req = action(tx.objectStore(STORE));
    tx.oncomplete = () => resolve(req?.result);
    tx.onerror = () => reject(tx.error);
  });
}

export function newId() {
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

// Newest first, as the sidebar lists them.
export async function listConversations() {
  const all = (await run("readonly", (s) => s.getAll())) ?? [];
  return all.sort((a, b) => b.updated - a.updated);
}

export function getConversation(id) {
  return run("readonly", (s) => s.get(id));
}

export function saveConversation(conversation) {
  // A structured clone: no live objects (DOM nodes, AbortControllers) may ride along.
  return run("readwrite", (s) => s.put(JSON.parse(JSON.stringify(conversation))));
}

export function deleteConversation(id) {
  return run("readwrite", (s) => s.delete(id));
}

export async function exportJson() {
  const conversations = await listConversations();
  return JSON.stringify({ format: EXPORT_FORMAT, version: 1, conversations }, null, 2);
}

function validMessage(m) {
  return m && ["system", "user", "assistant", "tool"].includes(m.role) && typeof m.content === "string";
}

// Imports what exportJson wrote; ids already present get new ones, so nothing is overwritten.
// Returns how many conversations were added; throws an Error saying what is wrong.
export async function importJson(text) {
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error("The file is not JSON.");
  }
  if (data?.format !== EXPORT_FORMAT || !Array.isArray(data.conversations)) {
    throw new Error("The file is not a pagedllm conversation export.");
  }
  const existing = new Set((await listConversations()).map((c) => c.id));
  let added = 0;
  for (const c of data.conversations) {
    if (!Array.isArray(c?.messages) || !c.messages.every(validMessage)) continue;
    const id = typeof c.id === "string" && !existing.has(c.id) ? c.id : newId();
    const now = Date.now();
    await saveConversation({
      id,
      title: String(c.title ?? "Imported chat").slice(0, 200),
      created: Number(c.created) || now,
      updated: Number(c.updated) || now,
      messages: c.messages,
    });
    existing.add(id);
    added += 1;
  }
  return added;
}

// Sampling settings: a field left empty is not sent, so the server's default applies.
const SETTINGS_KEY = "pagedllm.settings";
export const NUMBER_SETTINGS = [
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "max_tokens",
  "seed",
  "presence_penalty",
  "frequency_penalty",
];
export const DEFAULT_SETTINGS = Object.freeze({
  system: "",
  temperature: "",
  top_p: "",
  top_k: "",
  min_p: "",
  max_tokens: "",
  seed: "",
  presence_penalty: "",
  frequency_penalty: "",
  stop: "",
  extra: "",
});

export function loadSettings() {
  try {
    return { ...DEFAULT_SETTINGS, ...JSON.parse(localStorage.getItem(SETTINGS_KEY) ?? "{}") };
  } catch {
    return { ...DEFAULT_SETTINGS };
  }
}

export function saveSettings(settings) {
  localStorage.setItem(SETTINGS_KEY, JSON.stringify(settings));
}

// The request fields the settings give; throws when "extra" is not a JSON object.
export function samplingFields(settings) {
  const fields = {};
  for (const name of NUMBER_SETTINGS) {
    const text = String(settings[name] ?? "").trim();
    if (text !== "" && Number.isFinite(Number(text))) fields[name] = Number(text);
  }
  const stop = settings.stop.split("\n").filter((s) => s !== "");
  if (stop.length) fields.stop = stop;
  if (settings.extra.trim()) {
    const extra = JSON.parse(settings.extra);
    if (!extra || typeof extra !== "object" || Array.isArray(extra)) {
      throw new Error("Extra request fields must be a JSON object.");
    }
    Object.assign(fields, extra);
  }
  return fields;
}
