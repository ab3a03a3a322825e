// Bundles the chat page with esbuild into OUTDIR: index.html, which names one JS and one CSS
// file by content hash under webui/, plus the KaTeX fonts. CMake embeds every file of OUTDIR
// into the pagedllm binary (cmake/embed_files.cmake). Usage: node build.mjs OUTDIR
import * as esbuild from "esbuild";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = resolve(process.argv[2] ?? join(here, "dist"));

// Hashed names from an earlier build would be embedded too: start from an empty folder.
rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });

const result = await esbuild.build({
  entryPoints: { app: join(here, "src/main.js") },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  outdir,
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  // Browsers that read woff2 (all current ones) never ask for KaTeX's woff and ttf fallbacks.
  loader: { ".woff2": "file", ".woff": "empty", ".ttf": "empty" },
  metafile: true,
  logLevel: "warning",
});

const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = outputs.find((f) => f.endsWith(".js"));
const css = outputs.find((f) => f.endsWith(".css"));
if (!js || !css) throw new Error(`esbuild gave no app JS or CSS: ${outputs.join(", ")}`);

// Relative URLs, so the page also works behind a proxy that serves it under a sub-path.
const tags = `<link rel="stylesheet" href="webui/${css}">\n<script type="module" src="webui/${js}"></script>`;
const html = readFileSync(join(here, "src/index.html"), "utf8").replace("<!-- assets -->", tags);
if (!html.includes(js)) throw new Error("src/index.html has no <!-- assets --> marker");
writeFileSync(join(outdir, "index.html"), html);
