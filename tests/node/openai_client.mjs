// The official openai npm client against a running pagedllm server: streams a chat completion
// and a completion, and reads the typed non-streaming responses. Prints one JSON summary line;
// the GoogleTest that runs it checks the values.
//
//   node openai_client.mjs http://127.0.0.1:PORT/v1 MODEL
import OpenAI from "openai";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });

const completion = await client.completions.create({
  model, prompt: "Once upon a time", max_tokens: 24, temperature: 0,
});

let streamedCompletion = "";
let completionFinish = null;
let completionUsage = null;
const completionStream = await client.completions.create({
  model, prompt: "Once upon a time", max_tokens: 24, temperature: 0, stream: true,
  stream_options: { include_usage: true },
});
for await (const chunk of completionStream) {
  for (const choice of chunk.choices) {
    streamedCompletion += choice.text;
    if (choice.finish_reason) completionFinish = choice.finish_reason;
  }
  if (chunk.usage) completionUsage = chunk.usage;
}

const messages = [{ role: "user", content: "Tell me a story." }];
const chat = await client.chat.completions.create({
  model, messages, max_completion_tokens: 20, temperature: 0,
});
let streamedChat = "";
let chatRole = null;
let chatFinish = null;
const chatStream = await client.chat.completions.create({
  model, messages, max_completion_tokens: 20, temperature: 0, stream: true,
});
for await (const chunk of chatStream) {
  const choice = chunk.choices[0];
  if (!choice) continue;
  if (choice.delta.role) chatRole = choice.delta.role;
  if (choice.delta.content) streamedChat += choice.delta.content;
  if (choice.finish_reason) chatFinish = choice.finish_reason;
}

const models = await client.models.list();
let errorStatus = null;
try {
  await client.completions.create({ model, prompt: "x", temperature: 7 });
} catch (e) {
  errorStatus = e instanceof OpenAI.BadRequestError ? e.status : `unexpected ${e}`;
}

console.log(JSON.stringify({
  completion_text: completion.choices[0].text,
  completion_finish: completion.choices[0].finish_reason,
  completion_usage: completion.usage,
  streamed_completion: streamedCompletion,
  streamed_completion_finish: completionFinish,
  streamed_completion_usage: completionUsage,
  chat_text: chat.choices[0].message.content,
  chat_role: chat.choices[0].message.role,
  chat_usage: chat.usage,
  streamed_chat: streamedChat,
  streamed_chat_role: chatRole,
  streamed_chat_finish: chatFinish,
  model_ids: models.data.map((m) => m.id),
  error_status: errorStatus,
}));
