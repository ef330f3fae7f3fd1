// Builds the console's assets into ../dist (committed, embedded with go:embed): the modules
// in src/ bundled into one script (decode.js first, its exports made local, app.js's import
// of it dropped), the stylesheet, and index.html naming both by content hash so browsers
// may cache them for good. No dependencies beyond Node itself, and deterministic: the same
// sources give byte-identical output, which console_test.go checks against the committed
// dist/. Run it with `make console` after changing src/.
//
//   node internal/console/web/build.mjs [outDir]
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const src = (f) => readFileSync(join(here, "src", f), "utf8");
const out = process.argv[2] || join(here, "..", "dist");
const hash = (s) => createHash("sha256").update(s).digest("hex").slice(0, 12);

const decode = src("decode.js").replace(/^export /gm, "");
const app = src("app.js").replace(/^import \{[^}]*\} from "\.\/decode\.js";\n/m, "");
if (app.includes('from "./decode.js"')) throw new Error("app.js: import of decode.js not in the expected form");
const js = `// Magnetar console (built from internal/console/web/src by build.mjs; do not edit)\n"use strict";\n(() => {\n${decode}\n${app}})();\n`;
const css = src("style.css");
const names = { app: `assets/app.${hash(js)}.js`, style: `assets/style.${hash(css)}.css` };
const html = src("index.html").replace("{{app}}", names.app).replace("{{style}}", names.style);
if (html.includes("{{")) throw new Error("index.html: unknown placeholder");

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "assets"), { recursive: true });
writeFileSync(join(out, names.app), js);
writeFileSync(join(out, names.style), css);
writeFileSync(join(out, "index.html"), html);
console.log(`console built into ${out}: ${names.app}, ${names.style}`);
