// End-to-end tests of the chat page (webui/) in Debian's headless Chromium against a real
// `pagedllm serve`. ctest runs one test a process (tests/CMakeLists.txt):
//   node webui_test.mjs --binary B --source S --shared D --out SCREENSHOTS TestName
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import {
  answered,
  launchBrowser,
  metric,
  parseArgs,
  sendAndWait,
  setSettings,
  startServer,
  step,
  stopServer,
  successMetric,
  waitFor,
} from "./harness.mjs";
import { RENDERING_TESTS } from "./rendering_test.mjs";

const opts = parseArgs(process.argv.slice(2));

// Starts a server with `serverArgs` and a browser page on it, runs `body(page, server)`, and
// always leaves a screenshot of the page under --out, also when the test fails.
async function withPage(serverArgs, body, viewport = { width: 1100, height: 720 }) {
  const server = await startServer(opts, serverArgs);
  step(`server on ${server.url}`);
  const browser = await launchBrowser();
  step("browser started");
  const page = await browser.newPage({ viewport });
  page.setDefaultTimeout(60000);
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  try {
    await body(page, server);
    assert.deepEqual(pageErrors, [], "the page threw");
  } finally {
    const shot = join(opts.out, `${opts.test}.png`);
    await page.screenshot({ path: shot, timeout: 10000 }).then(() => step(`screenshot ${shot}`), () => {});
    await browser.close();
    await stopServer(server);
    step("server and browser closed");
  }
}

async function openPage(page, server) {
  await page.goto(`${server.url}/`);
  await page.waitForFunction(() => document.getElementById("model-name").textContent === "stories260K.gguf");
}

const TESTS = {
  // The page, its files and their headers; the startup line that names it.
  async ServedWithItsTypesAndCacheHeaders() {
    const server = await startServer(opts);
    try {
      assert.match(server.stdout(), new RegExp(`chat in a browser: ${server.url}/\n`));
      const page = await fetch(`${server.url}/`);
      assert.equal(page.status, 200);
      assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
      assert.equal(page.headers.get("cache-control"), "no-cache");
      assert.match(page.headers.get("content-security-policy"), /script-src 'self'/);
      const html = await page.text();
      const js = html.match(/src="(webui\/app-[A-Z0-9]+\.js)"/)?.[1];
      const css = html.match(/href="(webui\/app-[A-Z0-9]+\.css)"/)?.[1];
      assert.ok(js && css, "the page names its script and style sheet");
      const script = await fetch(`${server.url}/${js}`);
      assert.equal(script.status, 200);
      assert.equal(script.headers.get("content-type"), "text/javascript; charset=utf-8");
      assert.match(script.headers.get("cache-control"), /immutable/);
      assert.ok((await script.text()).length > 100000, "the script holds the bundled libraries");
      const style = await fetch(`${server.url}/${css}`);
      assert.equal(style.headers.get("content-type"), "text/css; charset=utf-8");
      assert.equal((await fetch(`${server.url}/webui/nothing.js`)).status, 404);
    } finally {
      await stopServer(server);
    }
  },

  async NoWebuiAnswers404AndTheApiStays() {
    const server = await startServer(opts, ["--no-webui"]);
    try {
      assert.doesNotMatch(server.stdout(), /chat in a browser/);
      const page = await fetch(`${server.url}/`);
      assert.equal(page.status, 404);
      assert.equal((await page.json()).error.message, "Not Found: no route GET /");
      assert.equal((await fetch(`${server.url}/webui/index.html`)).status, 404);
      assert.equal((await fetch(`${server.url}/v1/models`)).status, 200);
    } finally {
      await stopServer(server);
    }
  },

  // Send with Enter, see the text grow over several renders, and the answer's numbers.
  async SendsAMessageAndTheAnswerStreamsIn() {
    await withPage([], async (page, server) => {
      await openPage(page, server);
      await setSettings(page, { max_tokens: 300, extra: '{"ignore_eos": true}' });
      // Record the answer's length at each change of the DOM: a streamed answer grows in steps.
      await page.evaluate(() => {
        window.lengths = [];
        new MutationObserver(() => {
          const body = document.querySelector(".message.assistant:last-of-type .body");
          if (body) window.lengths.push(body.textContent.length);
        }).observe(document.getElementById("messages"), { childList: true, subtree: true, characterData: true });
      });
      // Shift+Enter starts a new line and sends nothing.
      await page.type("#prompt", "one");
      await page.keyboard.press("Shift+Enter");
      await page.keyboard.type("two");
      assert.equal(await page.inputValue("#prompt"), "one\ntwo");
      assert.equal(await page.locator(".message").count(), 0);
      // The tiny model writes 300 tokens within a frame or two; a throttled connection (about
      // 4 s for the stream) makes the renders that streaming must produce observable.
      const cdp = await page.context().newCDPSession(page);
      await cdp.send("Network.emulateNetworkConditions", {
        offline: false, latency: 0, downloadThroughput: 16 * 1024, uploadThroughput: -1,
      });
      const request = await sendAndWait(page, "Once upon a time");
      assert.equal(request.postDataJSON().stream, true);
      const lengths = [...new Set(await page.evaluate(() => window.lengths.filter((n) => n > 0)))];
      assert.ok(lengths.length >= 3, `the answer grew in steps: ${lengths}`);
      const answer = page.locator(".message.assistant").last();
      assert.ok((await answer.locator(".body").innerText()).length > 100);
      const stats = await answer.locator(".stats").innerText();
      assert.match(stats, /^stories260K\.gguf · 300 tokens · [0-9.]+ tokens\/s · \d+ ms to first token · cut at max tokens$/);
      assert.equal(await page.locator(".message.user .body").innerText(), "Once upon a time");
      assert.equal(await metric(server, successMetric("length")), 1);
    });
  },

  // The Stop button closes the stream, and the server counts the request as aborted.
  async StopAbortsTheAnswerOnTheServer() {
    // Answers far longer than the test: stories260K writes 1500 tokens in about a second on a
    // fast host, so an answer of that length could end before the click (the model's own
    // 2048-token context is stretched, as vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN allows).
    process.env.PAGEDLLM_ALLOW_LONG_MAX_MODEL_LEN = "1";
    const maxTokens = 100000;
    await withPage(["--max-model-len", "120000"], async (page, server) => {
      await openPage(page, server);
      await setSettings(page, { max_tokens: maxTokens, extra: '{"ignore_eos": true}' });
      await page.fill("#prompt", "Once upon a time");
      await page.press("#prompt", "Enter");
      await page.waitForFunction(() => document.querySelector(".message.assistant .body")?.textContent.length > 0);
      await page.click("#stop");
      await page.waitForSelector("#send", { state: "visible" });
      const aborted = await waitFor(async () => (await metric(server, successMetric("abort"))) === 1, "the abort in /metrics");
      assert.ok(aborted);
      assert.ok((await metric(server, "pagedllm:generation_tokens_total")) < maxTokens);
      assert.equal(await metric(server, successMetric("length")), 0);
      assert.match(await page.locator(".message.assistant .stats").innerText(), / · stopped$/);
      // Escape stops too.
      await page.fill("#prompt", "Once more");
      await page.press("#prompt", "Enter");
      await page.waitForFunction(() => document.querySelectorAll(".message.assistant")[1]?.querySelector(".body").textContent.length > 0);
      await page.keyboard.press("Escape");
      await waitFor(async () => (await metric(server, successMetric("abort"))) === 2, "the second abort");
      // A new chat mid-answer stops the answer, which stays in its own conversation.
      await page.fill("#prompt", "A third time");
      await page.press("#prompt", "Enter");
      await page.waitForFunction(() => document.querySelectorAll(".message.assistant")[2]?.querySelector(".body").textContent.length > 0);
      await page.click("#new-chat");
      await waitFor(async () => (await metric(server, successMetric("abort"))) === 3, "the third abort");
      // The server counts the abort when the stream closes; the page opens the new chat only once
      // the stopped answer's send has wound down (stopAndWait), which on a slow host comes later.
      await waitFor(async () => (await page.locator(".message").count()) === 0, "the new chat, empty");
      await page.locator("#conversation-list .conversation").first().click();
      await waitFor(async () => (await page.locator(".message.assistant").count()) === 3, "the first chat again");
      assert.match(await page.locator(".message.assistant .stats").last().innerText(), / · stopped$/);
    });
  },

  // A conversation is kept in IndexedDB: found again after a reload, renamed, exported,
  // imported and deleted.
  async ConversationsAreKeptRenamedExportedAndDeleted() {
    await withPage([], async (page, server) => {
      await openPage(page, server);
      // Greedy: the same answer every run, so its text compares the same way every run.
      await setSettings(page, { max_tokens: 40, temperature: 0 });
      await sendAndWait(page, "Tom had a red ball");
      const answer = await page.locator(".message.assistant .body").innerText();
      await page.reload();
      await openPage(page, server);
      assert.equal(await page.locator(".message.user .body").innerText(), "Tom had a red ball");
      assert.equal(await page.locator(".message.assistant .body").innerText(), answer);
      const list = page.locator("#conversation-list .conversation");
      assert.deepEqual(await list.allInnerTexts(), ["Tom had a red ball"]);
      // A new chat, then back to the first from the list.
      await page.click("#new-chat");
      await waitFor(async () => (await page.locator(".message").count()) === 0, "an empty chat");
      await list.first().click();
      assert.equal(await page.locator(".message.assistant .body").innerText(), answer);
      // Rename (the page asks with a prompt dialog).
      page.once("dialog", (d) => d.accept("Tom's ball"));
      await page.click('button[aria-label="Rename Tom had a red ball"]');
      await waitFor(async () => (await list.allInnerTexts())[0] === "Tom's ball", "the new name");
      // Export, then import the file back: two conversations.
      const download = page.waitForEvent("download");
      await page.click("#export");
      const exported = JSON.parse(readFileSync(await (await download).path(), "utf8"));
      assert.equal(exported.format, "pagedllm-conversations");
      assert.equal(exported.conversations[0].title, "Tom's ball");
      // The raw text the model sent; the page shows it rendered, without its leading space.
      assert.equal(exported.conversations[0].messages[1].content.trim(), answer.trim());
      await page.setInputFiles("#import-file", {
        name: "chats.json",
        mimeType: "application/json",
        buffer: Buffer.from(JSON.stringify(exported)),
      });
      await waitFor(async () => (await list.count()) === 2, "the imported conversation");
      // Delete both (each asks to confirm).
      page.on("dialog", (d) => d.accept());
      await page.click('button[aria-label="Delete Tom\'s ball"] >> nth=0');
      await waitFor(async () => (await list.count()) === 1, "one deleted");
      await page.click('button[aria-label="Delete Tom\'s ball"]');
      await waitFor(async () => (await list.count()) === 0, "both deleted");
      await page.reload();
      assert.equal(await page.locator("#conversation-list li").count(), 0);
    });
  },

  // The settings go into the request body, and are still there after a reload.
  async SettingsGoIntoTheRequestAndAreKept() {
    await withPage([], async (page, server) => {
      await openPage(page, server);
      await setSettings(page, {
        system: "You tell short stories.",
        temperature: 0.35,
        top_p: 0.9,
        top_k: 7,
        min_p: 0.05,
        max_tokens: 24,
        seed: 42,
        presence_penalty: 0.5,
        frequency_penalty: 0.25,
        stop: "The end\nBye",
      });
      const body = (await sendAndWait(page, "Once upon a time")).postDataJSON();
      assert.deepEqual(
        { ...body, messages: undefined },
        {
          model: "stories260K.gguf",
          stream: true,
          stream_options: { include_usage: true },
          temperature: 0.35,
          top_p: 0.9,
          top_k: 7,
          min_p: 0.05,
          max_tokens: 24,
          seed: 42,
          presence_penalty: 0.5,
          frequency_penalty: 0.25,
          stop: ["The end", "Bye"],
          messages: undefined,
        },
      );
      assert.deepEqual(body.messages, [
        { role: "system", content: "You tell short stories." },
        { role: "user", content: "Once upon a time" },
      ]);
      await page.reload();
      await page.click("#open-settings");
      assert.equal(await page.inputValue("#set-temperature"), "0.35");
      assert.equal(await page.inputValue("#set-stop"), "The end\nBye");
      // A field that is not a JSON object is refused in plain words, and nothing is saved.
      await page.fill("#set-extra", "[1, 2]");
      await page.click('#settings-form button[value="save"]');
      assert.equal(await page.locator("#settings-error").innerText(), "Extra request fields must be a JSON object.");
      assert.ok(await page.locator("#settings-dialog").isVisible());
    });
  },

  // Regenerate sends the same conversation again; Edit resends from the edited message.
  async RegenerateAndEditResend() {
    await withPage([], async (page, server) => {
      await openPage(page, server);
      await setSettings(page, { max_tokens: 16, seed: 1, temperature: 1 });
      const first = (await sendAndWait(page, "Lily saw a cat")).postDataJSON();
      await setSettings(page, { seed: 2 });
      const again = (await answered(page, () => page.click('button[aria-label="Regenerate this answer"]'))).postDataJSON();
      assert.deepEqual(again.messages, first.messages);
      assert.equal(again.seed, 2);
      assert.equal(await page.locator(".message").count(), 2);
      await page.click('button[aria-label="Edit this message and send it again"]');
      await page.fill('textarea[aria-label="Edited message"]', "Lily saw a dog");
      const edited = (await answered(page, () => page.click('button[aria-label="Send the edited message"]'))).postDataJSON();
      assert.deepEqual(edited.messages, [{ role: "user", content: "Lily saw a dog" }]);
      assert.equal(await page.locator(".message.user .body").innerText(), "Lily saw a dog");
      assert.equal(await page.locator(".message").count(), 2);
      assert.equal(await metric(server, "pagedllm:request_success_total{model_name=\"stories260K.gguf\",finished_reason=\"length\"}") +
        await metric(server, successMetric("stop")), 3);
    });
  },

  // The server's refusals are shown in plain words.
  async ServerErrorsAreShownInPlainWords() {
    await withPage([], async (page, server) => {
      await openPage(page, server);
      await setSettings(page, { max_tokens: 1000000 });
      await sendAndWait(page, "Once upon a time");
      const error = await page.locator(".message.assistant .message-error").innerText();
      assert.match(error, /^The server refused the request: .*max/);
    });
  },

  // With --api-key the page asks for the key once, sends it, and keeps it.
  async TheApiKeyIsAskedForAndKept() {
    await withPage(["--api-key", "sekrit"], async (page, server) => {
      await page.goto(`${server.url}/`);
      await page.waitForSelector("#key-dialog", { state: "visible" });
      assert.match(await page.locator("#key-reason").innerText(), /^This server needs an API key/);
      await page.fill("#key-input", "wrong");
      await page.press("#key-input", "Enter");
      await page.waitForFunction(() => document.getElementById("key-reason").textContent.startsWith("The server refused this API key."));
      assert.ok(await page.locator("#key-dialog").isVisible());
      assert.equal(await page.locator("#model-name").innerText(), "pagedllm");
      await page.fill("#key-input", "sekrit");
      await page.press("#key-input", "Enter");
      await page.waitForFunction(() => document.getElementById("model-name").textContent === "stories260K.gguf");
      assert.ok(!(await page.locator("#key-dialog").isVisible()));
      await setSettings(page, { max_tokens: 8 });
      const request = await sendAndWait(page, "Once upon a time");
      assert.equal(await request.headerValue("authorization"), "Bearer sekrit");
      assert.equal(await page.locator(".message-error").count(), 0);
      await page.reload();
      await page.waitForFunction(() => document.getElementById("model-name").textContent === "stories260K.gguf");
      assert.ok(!(await page.locator("#key-dialog").isVisible()));
    });
  },

  // axe-core finds no serious or critical violation, on a wide and on a phone-sized screen.
  async AccessibilityHasNoSeriousViolations() {
    const axe = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
    const check = async (page, what) => {
      await page.evaluate(axe);
      const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
      const serious = result.violations.filter((v) => ["serious", "critical"].includes(v.impact));
      assert.deepEqual(serious.map((v) => `${v.id}: ${v.nodes.map((n) => n.target).join(" ")}`), [], what);
    };
    await withPage([], async (page, server) => {
      await openPage(page, server);
      await setSettings(page, { max_tokens: 30 });
      await sendAndWait(page, "Once upon a time");
      await check(page, "the chat");
      await page.click("#open-settings");
      await check(page, "the settings dialog");
    });
    await withPage(
      [],
      async (page, server) => {
        await openPage(page, server);
        assert.ok(await page.locator("#open-sidebar").isVisible(), "the menu button shows on a phone");
        assert.equal(await page.locator("#sidebar").evaluate((e) => e.getBoundingClientRect().right <= 0), true);
        await page.click("#open-sidebar");
        await page.waitForFunction(() => document.getElementById("sidebar").getBoundingClientRect().left >= 0);
        await check(page, "the phone layout with the list open");
      },
      { width: 390, height: 760 },
    );
  },

  ...RENDERING_TESTS(opts, withPage, openPage),
};

const test = TESTS[opts.test];
if (!test) {
  console.error(`no test ${opts.test}; the tests: ${Object.keys(TESTS).join(" ")}`);
  process.exit(2);
}
// ctest's TIMEOUT would kill the process without a word: say where it stood first.
setTimeout(() => {
  step(`WebUI.${opts.test}: still running after 240 s; giving up`);
  process.exit(1);
}, 240000).unref();
const started = Date.now();
try {
  await test();
  console.log(`WebUI.${opts.test}: passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (e) {
  console.error(`WebUI.${opts.test}: FAILED\n${e.stack ?? e}`);
  process.exit(1);
}
