// Turns a message into DOM: Markdown (marked) with math (KaTeX) and highlighted code
// (highlight.js), then sanitized by DOMPurify. Model output is untrusted HTML: nothing of it
// reaches the DOM unsanitized, and the page's Content-Security-Policy forbids inline scripts
// besides.
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/common";
import { Marked } from "marked";
import markedKatex from "marked-katex-extension";

const marked = new Marked({ gfm: true, breaks: true });
marked.use(markedKatex({ throwOnError: false, nonStandard: true }));
marked.use({
  renderer: {
    code({ text, lang }) {
      const language = (lang ?? "").match(/^[\w+#.-]*/)[0];
      const known = language && hljs.getLanguage(language);
      const html = known
        ? hljs.highlight(text, { language, ignoreIllegals: true }).value
        : hljs.highlightAuto(text).value;
      const cls = known ? ` language-${language}` : "";
      return `<pre><code class="hljs${cls}">${html}</code></pre>\n`;
    },
  },
});

// Links from the model open in a new tab and cannot reach back to this page.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

// Markdown to a sanitized DocumentFragment, with a copy button on every code block.
export function renderMarkdown(text) {
  const html = marked.parse(text, { async: false });
  const fragment = DOMPurify.sanitize(html, { RETURN_DOM_FRAGMENT: true });
  for (const pre of fragment.querySelectorAll("pre")) addCopyButton(pre);
  return fragment;
}

function addCopyButton(pre) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "copy-code";
  button.textContent = "Copy";
  button.setAttribute("aria-label", "Copy the code");
  button.addEventListener("click", () => copyText(pre.querySelector("code")?.innerText ?? "", button));
  pre.prepend(button);
}

export async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => (button.textContent = "Copy"), 1500);
}

// A reasoning model writes "<think>...</think>" before its answer (or only "</think>" when the
// chat template opened the block); the server may also send it apart as reasoning_content.
export function splitThinking(message) {
  let thinking = message.reasoning ?? "";
  let answer = message.content ?? "";
  const open = answer.indexOf("<think>");
  const close = answer.indexOf("</think>");
  if (open >= 0 && (close < 0 || close > open)) {
    const end = close < 0 ? answer.length : close;
    thinking += answer.slice(open + 7, end);
    answer = answer.slice(0, open) + (close < 0 ? "" : answer.slice(close + 8));
  } else if (close >= 0) {
    thinking += answer.slice(0, close);
    answer = answer.slice(close + 8);
  }
  return { thinking: thinking.trim(), answer: answer.replace(/^\s+/, ""), thinkingOpen: open >= 0 && close < 0 };
}

function thinkingBlock(thinking, stillThinking, wasOpen) {
  const details = document.createElement("details");
  details.className = "think";
  details.open = wasOpen;
  const summary = document.createElement("summary");
  summary.textContent = stillThinking ? "Thinking…" : "Thoughts";
  const body = document.createElement("div");
  body.className = "markdown";
  body.append(renderMarkdown(thinking));
  details.append(summary, body);
  return details;
}

function toolCallBlock(call) {
  const block = document.createElement("div");
  block.className = "tool-call";
  const title = document.createElement("div");
  title.className = "tool-call-title";
  title.textContent = `Tool call: ${call.function?.name ?? "?"}`;
  const args = document.createElement("pre");
  args.textContent = call.function?.arguments ?? "";
  block.append(title, args);
  return block;
}

// Fills `el` with the message's thinking (collapsed unless the reader opened it), tool calls and
// answer. Called again at each streamed delta, so it keeps the open state of the thinking block.
export function renderMessageBody(el, message) {
  const wasOpen = el.querySelector("details.think")?.open ?? false;
  const { thinking, answer, thinkingOpen } =
    message.role === "user" ? { thinking: "", answer: message.content } : splitThinking(message);
  const parts = [];
  if (thinking) parts.push(thinkingBlock(thinking, thinkingOpen, wasOpen));
  for (const call of message.tool_calls ?? []) parts.push(toolCallBlock(call));
  const body = document.createElement("div");
  body.className = "markdown";
  if (message.role === "user") body.textContent = answer;
  else body.append(renderMarkdown(answer));
  parts.push(body);
  el.replaceChildren(...parts);
}
