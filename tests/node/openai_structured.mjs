// The official openai npm client's structured-output and tool-call helpers against a running
// pagedllm server: chat.completions.parse with zodResponseFormat, a named and a "required"
// tool_choice (plain, streamed, parsed with zodFunction, through runTools), and the errors the
// client raises for a bad schema and an unknown tool. Prints one JSON summary line; the
// GoogleTest that runs it checks the values.
//
//   node openai_structured.mjs http://127.0.0.1:PORT/v1 MODEL
import OpenAI from "openai";
import { z } from "zod";
import { zodFunction, zodResponseFormat } from "openai/helpers/zod";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });

const base = (seed) => ({
  model,
  messages: [{ role: "user", content: "Tell me about Lily." }],
  temperature: 1,
  seed,
  max_completion_tokens: 300,
});

// A bounded language, so the small story model always finishes: a short string, an enum, a
// small integer, a nested object, a nullable string, a union.
const Pet = z.object({
  name: z.string().max(10),
  mood: z.enum(["happy", "sad", "sleepy"]),
  age: z.number().int().min(1).max(9),
  home: z.object({ kind: z.enum(["house", "tree"]) }),
  nick: z.string().max(5).nullable(),
  tag: z.union([z.literal("cat"), z.number().int().min(0).max(9)]),
});
const petFormat = zodResponseFormat(Pet, "pet");

const parsed = [];
for (const seed of [1, 2, 3]) {
  const r = await client.chat.completions.parse({ ...base(seed), response_format: petFormat });
  const choice = r.choices[0];
  parsed.push({
    seed,
    finish_reason: choice.finish_reason,
    content: choice.message.content,
    parsed: choice.message.parsed,
    zod_accepts: Pet.safeParse(choice.message.parsed).success,
  });
}

const Weather = z.object({ city: z.string().max(12), unit: z.enum(["celsius", "fahrenheit"]) });
const Time = z.object({ zone: z.enum(["UTC", "CET"]) });
const tools = [
  zodFunction({ name: "get_weather", description: "The weather in a city", parameters: Weather }),
  zodFunction({ name: "get_time", parameters: Time }),
];
const named = {
  ...base(5),
  tools,
  tool_choice: { type: "function", function: { name: "get_weather" } },
};
const call = (c) => ({ name: c.function.name, arguments: c.function.arguments });

// Named tool_choice, not streamed.
const plain = await client.chat.completions.create(named);
const plainChoice = plain.choices[0];

// The same request streamed: the client's own accumulation, and ours from the raw deltas.
const stream = client.chat.completions.stream(named);
const final = await stream.finalChatCompletion();
const raw = await client.chat.completions.create({ ...named, stream: true });
const deltas = { heads: 0, indexes: [], name: null, id: null, arguments: "", content: "" };
let rawFinish = null;
for await (const chunk of raw) {
  const choice = chunk.choices[0];
  if (!choice) continue;
  if (choice.finish_reason) rawFinish = choice.finish_reason;
  if (choice.delta.content) deltas.content += choice.delta.content;
  for (const t of choice.delta.tool_calls ?? []) {
    deltas.indexes.push(t.index);
    if (t.id) {
      deltas.heads += 1;
      deltas.id = t.id;
      deltas.name = t.function?.name ?? null;
    }
    deltas.arguments += t.function?.arguments ?? "";
  }
}

// parse() with zodFunction tools fills parsed_arguments.
const parsedCall = await client.chat.completions.parse(named);
const parsedToolCall = parsedCall.choices[0].message.tool_calls[0];

// "required" with one call per answer.
const required = [];
for (const seed of [1, 2, 3]) {
  const r = await client.chat.completions.create({
    ...base(seed),
    tools,
    tool_choice: "required",
    parallel_tool_calls: false,
  });
  const choice = r.choices[0];
  const calls = choice.message.tool_calls ?? [];
  const schema = { get_weather: Weather, get_time: Time }[calls[0]?.function.name];
  required.push({
    finish_reason: choice.finish_reason,
    content: choice.message.content,
    calls: calls.map(call),
    zod_accepts: calls.length > 0 && !!schema?.safeParse(JSON.parse(calls[0].function.arguments)).success,
  });
}

// runTools on a named tool_choice: the client calls our function once with the arguments and
// stops; the conversation it keeps is user, assistant (the call), tool (our answer). The
// answer then goes back to the server as a follow-up turn.
let calledWith = null;
const runner = client.chat.completions.runTools({
  ...base(6),
  tool_choice: { type: "function", function: { name: "get_weather" } },
  tools: [
    {
      type: "function",
      function: {
        name: "get_weather",
        parameters: z.toJSONSchema(Weather),
        parse: JSON.parse,
        function: (args) => {
          calledWith = args;
          return "sunny";
        },
      },
    },
  ],
});
const runCall = await runner.finalFunctionToolCall();
const followUp = await client.chat.completions.create({
  ...base(6),
  messages: runner.messages,
  max_completion_tokens: 8,
});

// Errors: the client raises BadRequestError with the server's message, and the server goes on.
const errors = {};
const attempts = {
  bad_schema: {
    ...base(1),
    response_format: {
      type: "json_schema",
      json_schema: { name: "x", strict: true, schema: { type: "object", properties: { a: { type: "strin" } } } },
    },
  },
  unknown_tool: { ...base(1), tools, tool_choice: { type: "function", function: { name: "nope" } } },
};
for (const [name, body] of Object.entries(attempts)) {
  try {
    await client.chat.completions.create(body);
    errors[name] = { raised: null };
  } catch (e) {
    errors[name] = {
      raised: e instanceof OpenAI.BadRequestError ? "BadRequestError" : String(e),
      status: e.status,
      message: e.error?.message ?? null,
      param: e.param ?? null,
    };
  }
}
const after = await client.chat.completions.parse({ ...base(1), response_format: petFormat });

console.log(
  JSON.stringify({
    pet_schema: petFormat.json_schema.schema,
    pet_strict: petFormat.json_schema.strict,
    parsed,
    named: {
      finish_reason: plainChoice.finish_reason,
      content: plainChoice.message.content,
      calls: (plainChoice.message.tool_calls ?? []).map(call),
      id: plainChoice.message.tool_calls?.[0]?.id ?? null,
      zod_accepts: Weather.safeParse(JSON.parse(plainChoice.message.tool_calls[0].function.arguments)).success,
    },
    streamed: {
      finish_reason: final.choices[0].finish_reason,
      content: final.choices[0].message.content,
      calls: (final.choices[0].message.tool_calls ?? []).map(call),
    },
    raw_stream: { ...deltas, finish_reason: rawFinish },
    parsed_call: { ...call(parsedToolCall), parsed_arguments: parsedToolCall.function.parsed_arguments },
    required,
    run_tools: {
      call: { name: runCall.name, arguments: runCall.arguments },
      called_with: calledWith,
      roles: runner.messages.map((m) => m.role),
      follow_up_finish: followUp.choices[0].finish_reason,
      follow_up_content: followUp.choices[0].message.content,
    },
    weather_schema: z.toJSONSchema(Weather),
    time_schema: z.toJSONSchema(Time),
    errors,
    after_errors: { finish_reason: after.choices[0].finish_reason, parsed: after.choices[0].message.parsed },
  }),
);
