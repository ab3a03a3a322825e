// Helpers of the chat-page tests: a `pagedllm serve` child process with the shared stories260K
// model, Debian's Chromium driven by playwright-core, and the server's /metrics.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

// --binary B --source S --shared D --out O TestName
export function parseArgs(argv) {
  const opts = { test: null };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith("--")) opts[argv[i].slice(2)] = argv[++i];
    else opts.test = argv[i];
  }
  for (const need of ["binary", "source", "shared", "out"]) {
    if (!opts[need]) throw new Error(`missing --${need}`);
  }
  // As in tests/test_paths.h, $PAGEDLLM_SHARED_DIR wins over the configured directory.
  opts.shared = process.env.PAGEDLLM_SHARED_DIR ?? opts.shared;
  mkdirSync(opts.out, { recursive: true });
  return opts;
}

// Starts `pagedllm serve --port 0 ...` and waits for the line that names its URL.
export function startServer(opts, extraArgs = []) {
  const args = [
    "serve",
    "--port", "0",
    "--log-stats-interval", "0",
    "--threads", "1",
    "--model", join(opts.shared, "models/stories260K/stories260K.gguf"),
    "--chat-template", join(opts.source, "examples/chat-templates/story.jinja"),
    ...extraArgs,
  ];
  const child = spawn(opts.binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail("no URL within 60 s"), 60000);
    function fail(why) {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`pagedllm serve did not start (${why}):\n${stdout}\n${stderr}`));
    }
    child.on("exit", (code) => fail(`exited with ${code}`));
    child.stdout.on("data", (d) => {
      stdout += d;
      const m = stdout.match(/ on (http:\/\/127\.0\.0\.1:\d+)\n/);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners("exit");
      // The rest of the startup lines follow at once; give them a moment to arrive.
      setTimeout(() => resolve({ url: m[1], child, stdout: () => stdout, stderr: () => stderr }), 100);
    });
  });
}

export async function stopServer(server) {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise((r) => server.child.once("exit", r));
  server.child.kill("SIGTERM");
  // The timer is unref'd: once the server has exited, a pending 10 s timer must not keep node
  // (and so each ctest run) alive until it fires.
  const late = new Promise((r) => setTimeout(r, 10000).unref());
  if ((await Promise.race([exited.then(() => "exited"), late])) !== "exited") server.child.kill("SIGKILL");
}

// A line on stderr with the seconds since the start, so that a slow or stuck step shows in
// ctest's output.
const started = Date.now();
export function step(what) {
  console.error(`[${((Date.now() - started) / 1000).toFixed(1)} s] ${what}`);
}

export async function launchBrowser() {
  return chromium.launch({ executablePath: "/usr/bin/chromium", headless: true });
}

// The value of the metric line that starts with `prefix` (name and labels), or null.
export async function metric(server, prefix) {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  for (const line of text.split("\n")) {
    if (line.startsWith(prefix)) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return null;
}

export function successMetric(reason) {
  return `pagedllm:request_success_total{model_name="stories260K.gguf",finished_reason="${reason}"}`;
}

// Polls `probe` until it returns something truthy; throws after `ms`.
export async function waitFor(probe, what, ms = 20000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Fills the settings dialog (field name -> value) and saves it.
export async function setSettings(page, values) {
  await page.click("#open-settings");
  for (const [name, value] of Object.entries(values)) {
    await page.fill(`#settings-form [name="${name}"]`, String(value));
  }
  await page.click('#settings-form button[value="save"]');
  await page.waitForSelector("#settings-dialog", { state: "hidden" });
}

// Runs `action` (which starts an answer) and waits until the answer's stream has ended and the
// page shows the Send button again. Returns the request the page sent.
export async function answered(page, action) {
  const response = page.waitForResponse((r) => r.url().endsWith("/v1/chat/completions"));
  await action();
  const r = await response;
  await r.finished();
  await page.waitForSelector("#send", { state: "visible", timeout: 60000 });
  return r.request();
}

// Sends `text` with the Enter key and waits for the whole answer; returns the request sent.
export function sendAndWait(page, text) {
  return answered(page, async () => {
    await page.fill("#prompt", text);
    await page.press("#prompt", "Enter");
  });
}
