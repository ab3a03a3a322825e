// The page talks only to its own server's OpenAI API: /v1/models, /v1/chat/completions
// (streamed) and /metrics. Errors become ApiError with a sentence a person can act on.

const KEY_STORAGE = "pagedllm.apiKey";

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

export function apiKey() {
  return localStorage.getItem(KEY_STORAGE) ?? "";
}

export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = apiKey();
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

// The server's own message is kept: it says which field or limit was wrong.
function plainWords(status, message) {
  const said = message ? `: ${message}` : "";
  switch (status) {
    case 400:
      return `The server refused the request${said}`;
    case 401:
      return "The server needs an API key, or the key given is wrong.";
    case 404:
      return `The server has no such model or route${said}`;
    case 413:
      return "The conversation is larger than the server accepts (--max-body-mib). Start a new chat.";
    case 503:
      return "The server is busy (too many requests waiting). Try again in a moment.";
    default:
      return `The server failed (HTTP ${status})${said}`;
  }
}

async function errorFrom(res) {
  let message = "";
  try {
    message = (await res.json())?.error?.message ?? "";
  } catch {
    // Not an OpenAI error body; the status alone has to do.
  }
  return new ApiError(plainWords(res.status, message), res.status);
}

async function send(path, init) {
  try {
    return await fetch(path, init);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError("Cannot reach the server. Is pagedllm serve still running?", 0);
  }
}

export async function fetchModels() {
  const res = await send("v1/models", { headers: headers() });
  if (!res.ok) throw await errorFrom(res);
  return (await res.json()).data ?? [];
}

// A few gauges of /metrics (Prometheus text) for the header; null when it cannot be read.
export async function fetchLoad() {
  const res = await send("metrics", {});
  if (!res.ok) return null;
  const text = await res.text();
  const value = (name) => {
    const m = text.match(new RegExp(`^pagedllm:${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, "m"));
    return m ? Number(m[1]) : null;
  };
  return {
    running: value("num_requests_running"),
    waiting: value("num_requests_waiting"),
    kvUsage: value("kv_cache_usage_perc"),
  };
}

// Splits a Server-Sent Events body into the JSON of each `data:` event until [DONE].
async function* sseEvents(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") return;
        yield JSON.parse(data);
      }
    }
  }
}

// Streams a chat completion: yields each chunk. Aborting `signal` closes the connection,
// which makes the server abort the request and free its KV cache.
export async function* streamChat(body, signal) {
  const res = await send("v1/chat/completions", {
    method: "POST",
    headers: headers(),
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok) throw await errorFrom(res);
  for await (const chunk of sseEvents(res.body)) {
    if (chunk.error) {
      throw new ApiError(plainWords(chunk.error.code ?? 500, chunk.error.message), 500);
    }
    yield chunk;
  }
}
