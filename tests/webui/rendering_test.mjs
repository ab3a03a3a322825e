// How the page renders an answer. The model's output cannot be chosen, so these tests answer
// /v1/chat/completions themselves (playwright's page.route) with a stream of chosen text; the
// rest of the page still talks to the real server.
import assert from "node:assert/strict";
import { sendAndWait } from "./harness.mjs";

// An SSE body that streams `text` in pieces of `size` characters, then usage and [DONE].
function sseBody(text, size = 7) {
  const events = [];
  for (let i = 0; i < text.length; i += size) {
    const delta = { content: text.slice(i, i + size) };
    events.push({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: null }] });
  }
  events.push({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
  events.push({ id: "x", object: "chat.completion.chunk", choices: [], usage: { completion_tokens: 12 } });
  return events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n";
}

async function answerWith(page, reply) {
  await page.route("**/v1/chat/completions", (route) => route.fulfill(reply));
}

const MARKDOWN = [
  "<think>The user wants code. secret reasoning</think>",
  "Here is **code**:",
  "",
  "```python",
  "def greet(name):",
  "    print('hi', name)",
  "```",
  "",
  "| a | b |",
  "|---|---|",
  "| 1 | 2 |",
  "",
  "Math: $x^2 + 1$",
  "",
  '<script>window.pwned = "script"</script>',
  '<img src="x" onerror="window.pwned = \'img\'">',
  '<a href="javascript:window.pwned=\'link\'">click</a>',
  '<iframe src="https://example.com"></iframe>',
].join("\n");

export function RENDERING_TESTS(opts, withPage, openPage) {
  return {
    // Markdown: a highlighted code block with a copy button, a table, math, a collapsed
    // thinking block; HTML in the answer is sanitized and runs nothing.
    async MarkdownRendersAndModelHtmlDoesNotRun() {
      await withPage([], async (page, server) => {
        await openPage(page, server);
        await answerWith(page, { status: 200, contentType: "text/event-stream", body: sseBody(MARKDOWN) });
        await sendAndWait(page, "Show me code");
        const answer = page.locator(".message.assistant .body");
        const code = answer.locator("pre > code.hljs.language-python");
        assert.equal(await code.count(), 1);
        assert.equal(await code.innerText(), "def greet(name):\n    print('hi', name)");
        assert.ok((await code.locator("span.hljs-keyword").count()) >= 1, "the code is highlighted");
        assert.equal(await answer.locator("pre > button.copy-code").innerText(), "Copy");
        assert.equal(await answer.locator("table td").allInnerTexts().then((t) => t.join(",")), "1,2");
        assert.equal(await answer.locator(".katex").count(), 1);
        assert.equal(await answer.locator("strong").innerText(), "code");
        // The thinking is there, collapsed.
        const think = answer.locator("details.think");
        assert.equal(await think.count(), 1);
        assert.equal(await think.evaluate((d) => d.open), false);
        assert.match(await think.locator("summary").innerText(), /Thoughts/);
        assert.match(await think.evaluate((d) => d.textContent), /secret reasoning/);
        // Nothing of the model's HTML can run.
        assert.equal(await page.locator("#messages script, #messages iframe, #messages [onerror]").count(), 0);
        const href = await answer.locator("a").getAttribute("href");
        assert.ok(!href || !href.startsWith("javascript:"), `a javascript: link survived: ${href}`);
        await answer.locator("a").click().catch(() => {});
        await page.waitForTimeout(200);
        assert.equal(await page.evaluate(() => window.pwned), undefined);
        // The copy button copies the code.
        await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
        await answer.locator("pre > button.copy-code").click();
        assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "def greet(name):\n    print('hi', name)");
      });
    },

    // A reasoning parser's reasoning_content shows as a collapsed block, and tool calls show by
    // name and arguments, also after a reload (they are saved with the conversation).
    async ReasoningAndToolCallsAreShown() {
      await withPage([], async (page, server) => {
        await openPage(page, server);
        const chunk = (delta, finish = null) => ({ choices: [{ index: 0, delta, finish_reason: finish }] });
        const events = [
          chunk({ role: "assistant", reasoning_content: "Weather needs " }),
          chunk({ reasoning_content: "a tool." }),
          chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city": ' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
          chunk({}, "tool_calls"),
        ];
        const body = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n";
        await answerWith(page, { status: 200, contentType: "text/event-stream", body });
        await sendAndWait(page, "Weather in Paris?");
        const answer = page.locator(".message.assistant .body");
        const think = answer.locator("details.think");
        assert.equal(await think.evaluate((d) => d.open), false);
        assert.equal(await think.locator(".markdown").evaluate((e) => e.textContent.trim()), "Weather needs a tool.");
        assert.equal(await answer.locator(".tool-call-title").innerText(), "Tool call: get_weather");
        assert.equal(await answer.locator(".tool-call pre").innerText(), '{"city": "Paris"}');
        await page.reload();
        await openPage(page, server);
        assert.equal(await page.locator(".message.assistant .tool-call-title").innerText(), "Tool call: get_weather");
        assert.equal(await page.locator(".message.assistant details.think").count(), 1);
      });
    },

    // A server error in the middle of a stream, and one the server sends as a status.
    async StreamedAndHttpErrorsAreShown() {
      await withPage([], async (page, server) => {
        await openPage(page, server);
        await answerWith(page, { status: 503, contentType: "application/json", body: '{"error":{"message":"queue full"}}' });
        await sendAndWait(page, "Hello");
        assert.equal(
          await page.locator(".message.assistant .message-error").innerText(),
          "The server is busy (too many requests waiting). Try again in a moment.",
        );
        await page.unroute("**/v1/chat/completions");
        const broken = 'data: {"choices":[{"index":0,"delta":{"content":"Once"}}]}\n\ndata: {"error":{"message":"the engine failed","code":500}}\n\n';
        await answerWith(page, { status: 200, contentType: "text/event-stream", body: broken });
        await sendAndWait(page, "Again");
        const last = page.locator(".message.assistant").last();
        assert.equal(await last.locator(".body").innerText(), "Once");
        assert.equal(await last.locator(".message-error").innerText(), "The server failed (HTTP 500): the engine failed");
      });
    },
  };
}
