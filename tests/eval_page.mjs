// Evaluate cookbook page modules with node itself and print their exports as JSON (callbacks as "<function>").
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
const out = {};
const dir = mkdtempSync(join(tmpdir(), "page-"));
for (const [i, file] of process.argv.slice(2).entries()) {
  const copy = join(dir, `p${i}.mjs`);
  writeFileSync(copy, readFileSync(file, "utf8"));
  const mod = await import(pathToFileURL(copy).href);
  out[file] = JSON.parse(JSON.stringify({ ...mod }, (k, v) => (typeof v === "function" ? "<function>" : v)));
}
process.stdout.write(JSON.stringify(out));
