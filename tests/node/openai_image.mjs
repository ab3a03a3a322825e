// The official openai npm client sends an image to a pagedllm server as a base64 data URL, in
// a plain and a streamed chat completion. Prints one JSON summary line; the GoogleTest that
// runs it checks the values.
//
//   node openai_image.mjs http://127.0.0.1:PORT/v1 MODEL IMAGE.png
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const [baseURL, model, imagePath] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });
const url = "data:image/png;base64," + readFileSync(imagePath).toString("base64");
const messages = [{
  role: "user",
  content: [
    { type: "text", text: "Describe" },
    { type: "image_url", image_url: { url, detail: "auto" } },
  ],
}];
const request = { model, messages, max_completion_tokens: 6, temperature: 0, ignore_eos: true };

const chat = await client.chat.completions.create(request);
let streamed = "";
let streamedUsage = null;
const stream = await client.chat.completions.create({
  ...request, stream: true, stream_options: { include_usage: true },
});
for await (const chunk of stream) {
  if (chunk.choices[0]?.delta?.content) streamed += chunk.choices[0].delta.content;
  if (chunk.usage) streamedUsage = chunk.usage;
}

let errorStatus = null;
try {
  await client.chat.completions.create({
    model, max_completion_tokens: 2,
    messages: [{ role: "user", content: [
      { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] }],
  });
} catch (e) {
  errorStatus = e instanceof OpenAI.BadRequestError ? e.status : `unexpected ${e}`;
}

console.log(JSON.stringify({
  text: chat.choices[0].message.content,
  usage: chat.usage,
  streamed,
  streamed_usage: streamedUsage,
  error_status: errorStatus,
}));
