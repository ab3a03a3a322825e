// Validates JSON texts against a JSON Schema with Ajv (an independent implementation), for the
// structured-output tests. usage: node validate_json_schema.mjs SCHEMA_FILE TEXTS_FILE
// TEXTS_FILE holds a JSON array of strings; prints one line per text: "valid" or
// "invalid <reason>".
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
// Draft 2020-12 (prefixItems, $defs); the draft-07 forms the tests use mean the same there.
const Ajv = require("ajv/dist/2020");

const [schemaFile, textsFile] = process.argv.slice(2);
const ajv = new Ajv({ strict: false, allErrors: false });
const validate = ajv.compile(JSON.parse(readFileSync(schemaFile, "utf8")));
for (const text of JSON.parse(readFileSync(textsFile, "utf8"))) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    console.log(`invalid not JSON: ${e.message}`);
    continue;
  }
  console.log(validate(value) ? "valid" : `invalid ${ajv.errorsText(validate.errors)}`);
}
